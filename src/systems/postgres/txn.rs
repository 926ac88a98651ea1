//! PostgreSQL client for the list-append transaction workload (`--workload txn`): each op is one
//! real SQL transaction at the run's isolation level (`--isolation`), one statement per micro-op,
//! on `txn_lists(k text primary key, v bigint[] not null)`:
//! - `["append", k, e]` → `INSERT … VALUES (k, ARRAY[e]) ON CONFLICT (k) DO UPDATE SET v =
//!   txn_lists.v || EXCLUDED.v` (an upsert that appends);
//! - `["r", k, nil]` → `SELECT v … WHERE k = $1` → `["r", k, [e…]]` (no row = `[]`).
//!
//! Routing: every transaction goes to the primary, except that with `--read-from replica` (or
//! `any`) read-only ones go where the register client's router sends reads, to show what
//! replicas serve (`own`, the default, means the primary here: a transaction has no own node).
//! Hot standbys refuse SERIALIZABLE, so a read-only transaction on a replica runs at REPEATABLE
//! READ when the run asks for serializable (the strongest a standby offers).
//!
//! Outcomes: any error before `COMMIT` was sent (connecting, a statement's error such as a
//! serialization failure 40001 or deadlock 40P01, a lost connection, a timeout) leaves the
//! transaction uncommitted → `fail`; `COMMIT` answered with an error the server classifies as
//! aborting (40001 at commit under SERIALIZABLE) → `fail`; the connection lost or the op timed out
//! after `COMMIT` was sent, or another error then → `info`. Does not own the cluster (`db`), the
//! schema (`client::SCHEMA_SQL`) or the checker (`checker::txn`).

use super::client::{Certainty, PgClient, PgClientConfig, classify_server_error};
use crate::client::{Client, ClientOpenError, Completion};
use crate::generator::txn::{Mop, key_text, parse_mops as parse};
use crate::options::ReadFrom;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;
use tokio_postgres::{NoTls, Statement};

/// Transaction isolation level (`--isolation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// READ COMMITTED (PostgreSQL's default level).
    ReadCommitted,
    /// REPEATABLE READ (snapshot isolation in PostgreSQL).
    RepeatableRead,
    /// SERIALIZABLE (serializable snapshot isolation).
    #[default]
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

    /// The `BEGIN` statement.
    fn begin_sql(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "BEGIN ISOLATION LEVEL READ COMMITTED",
            Isolation::RepeatableRead => "BEGIN ISOLATION LEVEL REPEATABLE READ",
            Isolation::Serializable => "BEGIN ISOLATION LEVEL SERIALIZABLE",
        }
    }
}

impl std::fmt::Display for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

const APPEND_SQL: &str = "INSERT INTO txn_lists (k, v) VALUES ($1, ARRAY[$2::bigint]) \
     ON CONFLICT (k) DO UPDATE SET v = txn_lists.v || EXCLUDED.v";
const READ_SQL: &str = "SELECT v FROM txn_lists WHERE k = $1";

struct Conn {
    client: tokio_postgres::Client,
    append: Statement,
    read: Statement,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Where one transaction got to when it stopped.
struct Stopped {
    error: String,
    /// `COMMIT` had been sent.
    commit_sent: bool,
    /// The server answered with an error that aborts the transaction.
    certainty: Certainty,
}

/// The list-append transaction client (one per worker thread).
pub struct PgTxnClient {
    router: PgClient,
    cfg: PgClientConfig,
    isolation: Isolation,
    conns: Vec<Option<Conn>>,
    /// Set once the current transaction's `COMMIT` was handed to the connection.
    commit_sent: bool,
}

impl PgTxnClient {
    /// A client; connections open on first use.
    pub fn new(cfg: PgClientConfig, isolation: Isolation) -> Result<PgTxnClient, ClientOpenError> {
        let router = PgClient::new(cfg.clone())?;
        Ok(PgTxnClient {
            conns: (0..cfg.nodes.len()).map(|_| None).collect(),
            router,
            cfg,
            isolation,
            commit_sent: false,
        })
    }

    fn label(&self, i: usize) -> String {
        super::client::node_label(&self.cfg, i)
    }

    async fn connect(&self, i: usize) -> Result<Conn, tokio_postgres::Error> {
        let (client, connection) = super::client::pg_config(&self.cfg, i, "shakedown-txn")
            .connect(NoTls)
            .await?;
        let task = tokio::spawn(async move {
            let _ = connection.await;
        });
        match tokio::try_join!(client.prepare(APPEND_SQL), client.prepare(READ_SQL)) {
            Ok((append, read)) => Ok(Conn {
                client,
                append,
                read,
                task,
            }),
            Err(e) => {
                task.abort();
                Err(e)
            }
        }
    }

    /// Run the transaction on node `i`: the completed micro-ops, or where it stopped.
    async fn run(
        &mut self,
        i: usize,
        mops: &[Mop],
        isolation: Isolation,
    ) -> Result<Value, Stopped> {
        let stopped = |label: String, e: &tokio_postgres::Error, commit_sent: bool| Stopped {
            error: format!("{label}: {}", super::client::describe(e)),
            commit_sent,
            certainty: match e.as_db_error() {
                Some(db) => classify_server_error(db.severity(), db.code().code()),
                None => Certainty::Unknown,
            },
        };
        if self.conns[i].as_ref().is_some_and(|c| c.client.is_closed()) {
            self.conns[i] = None;
        }
        if self.conns[i].is_none() {
            match self.connect(i).await {
                Ok(c) => self.conns[i] = Some(c),
                Err(e) => {
                    let mut s = stopped(format!("{}: connecting", self.label(i)), &e, false);
                    s.certainty = Certainty::NotApplied;
                    return Err(s);
                }
            }
        }
        let label = self.label(i);
        let conn = self.conns[i].as_ref().expect("connection just opened");
        if let Err(e) = conn.client.batch_execute(isolation.begin_sql()).await {
            return Err(stopped(label, &e, false));
        }
        let mut done = Vec::with_capacity(mops.len());
        for m in mops {
            let r = match m {
                Mop::Append { key, elem } => conn
                    .client
                    .execute(&conn.append, &[&key_text(key), elem])
                    .await
                    .map(|_| json!(["append", key, elem])),
                Mop::Read { key } => conn
                    .client
                    .query_opt(&conn.read, &[&key_text(key)])
                    .await
                    .and_then(|row| match row {
                        None => Ok(Vec::new()),
                        Some(row) => row.try_get::<_, Vec<i64>>(0),
                    })
                    .map(|list| json!(["r", key, list])),
            };
            match r {
                Ok(v) => done.push(v),
                Err(e) => {
                    let s = stopped(label, &e, false);
                    // Not committed: roll back so the connection can be reused.
                    if conn.client.batch_execute("ROLLBACK").await.is_err() {
                        self.conns[i] = None;
                    }
                    return Err(s);
                }
            }
        }
        self.commit_sent = true;
        match conn.client.batch_execute("COMMIT").await {
            Ok(()) => Ok(Value::Array(done)),
            Err(e) => Err(stopped(label, &e, true)),
        }
    }
}

#[async_trait::async_trait]
impl Client for PgTxnClient {
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
        let read_only = mops.iter().all(|m| matches!(m, Mop::Read { .. }));
        let primary = self.router.primary();
        // Everything on the primary unless --read-from asks for replicas (or any node).
        let to_replicas = matches!(self.cfg.read_from, ReadFrom::Replica | ReadFrom::Any);
        let node = if read_only && to_replicas {
            self.router.pick_read_node()
        } else {
            primary
        };
        let isolation = if node != primary && self.isolation == Isolation::Serializable {
            Isolation::RepeatableRead
        } else {
            self.isolation
        };
        self.commit_sent = false;
        let timeout = Duration::from_millis(self.cfg.timeout_ms);
        let result = match tokio::time::timeout(timeout, self.run(node, &mops, isolation)).await {
            Ok(r) => r,
            Err(_) => {
                self.conns[node] = None;
                Err(Stopped {
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
                    certainty: Certainty::Unknown,
                })
            }
        };
        match result {
            Ok(value) => Completion::Ok {
                value,
                version: None,
            },
            Err(s) => {
                if s.certainty == Certainty::Unknown {
                    self.conns[node] = None;
                }
                // Uncommitted until COMMIT was sent; after it, only a definite abort is a fail.
                if !s.commit_sent || s.certainty == Certainty::NotApplied {
                    Completion::Fail {
                        error: s.error,
                        value: value.clone(),
                    }
                } else {
                    Completion::Info { error: s.error }
                }
            }
        }
    }

    async fn close(&mut self) {
        self.conns.iter_mut().for_each(|c| *c = None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isolation_levels_begin_their_transactions() {
        assert_eq!(
            Isolation::RepeatableRead.begin_sql(),
            "BEGIN ISOLATION LEVEL REPEATABLE READ"
        );
    }
}
