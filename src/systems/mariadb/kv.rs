//! MariaDB / Galera client for the register and set workloads, with `mysql_async`: one
//! autocommit statement per op, routed by `conn::Router` (writes to the primary on `--db
//! mariadb`, per `--write-to` on `--db galera`; reads per `--read-from`).
//!
//! Register semantics on `regs(k varchar primary key, v bigint, version bigint not null)`:
//! - `read` → `SELECT v, version … WHERE k = ?` → `Ok { value: int | null (absent), version }`.
//! - `write v` → `INSERT … VALUES (k, v, LAST_INSERT_ID(1)) ON DUPLICATE KEY UPDATE v =
//!   VALUES(v), version = LAST_INSERT_ID(version + 1)`: the row's version goes up by one with
//!   every write and comes back in the OK packet's insert id → `Ok { value: v, version }`. Row
//!   locks serialize the writers of a key on the node that runs them (on Galera, certification
//!   across nodes), so the version column is the session checker's version order.
//! - `cas [old, new]` → `UPDATE … SET v = new, version = LAST_INSERT_ID(version + 1) WHERE k = ?
//!   AND v = old` → `Ok { value: [old, new], version }`, or with no row changed `Fail { error:
//!   "cas-mismatch" }` (it ran and saw another value, or no row).
//!
//! Set semantics (`with_set_ops`) on `set_elems(k varchar, e bigint, primary key (k, e))`: `add
//! e` → `INSERT IGNORE` → `Ok { value: e }` (errors classified as for a write); `read` →
//! `SELECT e … WHERE k = ?`, routed like register reads → `Ok { value: [elements] }`.
//!
//! Outcomes: reads never change state, so every read error is `fail`; a write's error is `fail`
//! when it never reached the server or its code is definite (`conn::FailReason`, its word first
//! in the error), else `info` (a lost connection or a timeout after sending). Does not own the
//! tables (`db` creates them) or the transaction workload (`txn`).

use super::conn::{FailReason, MyClientConfig, Router, breaks_connection, describe};
use crate::client::{Client, ClientOpenError, Completion, WorkloadOp};
use crate::model::CAS_MISMATCH;
use mysql_async::prelude::Queryable;
use serde_json::{Value, json};
use std::time::Duration;

const READ_SQL: &str = "SELECT v, version FROM regs WHERE k = ?";
const WRITE_SQL: &str = "INSERT INTO regs (k, v, version) VALUES (?, ?, LAST_INSERT_ID(1)) \
     ON DUPLICATE KEY UPDATE v = VALUES(v), version = LAST_INSERT_ID(version + 1)";
const CAS_SQL: &str =
    "UPDATE regs SET v = ?, version = LAST_INSERT_ID(version + 1) WHERE k = ? AND v = ?";
const SET_ADD_SQL: &str = "INSERT IGNORE INTO set_elems (k, e) VALUES (?, ?)";
const SET_READ_SQL: &str = "SELECT e FROM set_elems WHERE k = ?";

/// A register (or set) client over a MariaDB or Galera cluster (one per worker thread).
pub struct MyKvClient {
    cfg: MyClientConfig,
    conns: Vec<Option<mysql_async::Conn>>,
    router: Router,
    /// Set once the current op's statement was handed to the connection.
    sent: bool,
    /// Serve the set workload: `read` returns a set's elements, `add` inserts one.
    set_ops: bool,
}

/// What one statement returned.
enum Answer {
    /// A register read: the row's value and version, if there is a row.
    Row(Option<(Option<i64>, i64)>),
    /// A set read's elements.
    Elements(Vec<i64>),
    /// A write: rows changed and the version it reported (the insert id; 0 = none).
    Written { rows: u64, version: u64 },
}

impl MyKvClient {
    /// A client; connections open on first use. Fails on a config [`MyClientConfig::check`]
    /// refuses.
    pub fn new(cfg: MyClientConfig) -> Result<MyKvClient, ClientOpenError> {
        cfg.check()?;
        Ok(MyKvClient {
            conns: (0..cfg.nodes.len()).map(|_| None).collect(),
            router: Router::new(cfg.seed),
            cfg,
            sent: false,
            set_ops: false,
        })
    }

    /// Serve the set workload (`add` / `read` of a whole set) instead of the register one.
    pub fn with_set_ops(mut self) -> MyKvClient {
        self.set_ops = true;
        self
    }

    async fn run(
        &mut self,
        i: usize,
        key: &str,
        op: WorkloadOp,
    ) -> Result<Answer, mysql_async::Error> {
        if self.conns[i].is_none() {
            self.conns[i] = Some(self.cfg.connect(i).await?);
        }
        let conn = self.conns[i].as_mut().expect("connection just opened");
        self.sent = true;
        let written = |conn: &mysql_async::Conn| Answer::Written {
            rows: conn.affected_rows(),
            version: conn.last_insert_id().unwrap_or(0),
        };
        Ok(match op {
            WorkloadOp::Read => Answer::Row(conn.exec_first(READ_SQL, (key,)).await?),
            WorkloadOp::SetRead => Answer::Elements(conn.exec(SET_READ_SQL, (key,)).await?),
            WorkloadOp::Write(v) => {
                conn.exec_drop(WRITE_SQL, (key, v)).await?;
                written(conn)
            }
            WorkloadOp::Cas(old, new) => {
                conn.exec_drop(CAS_SQL, (new, key, old)).await?;
                written(conn)
            }
            WorkloadOp::SetAdd(e) => {
                conn.exec_drop(SET_ADD_SQL, (key, e)).await?;
                written(conn)
            }
        })
    }
}

/// The completion of an answered op.
fn answered(op: WorkloadOp, answer: Answer) -> Completion {
    match (op, answer) {
        (_, Answer::Row(None)) => Completion::Ok {
            value: Value::Null,
            version: None,
        },
        (_, Answer::Row(Some((value, version)))) => Completion::Ok {
            value: value.map_or(Value::Null, |v| json!(v)),
            version: Some(version),
        },
        (_, Answer::Elements(es)) => Completion::Ok {
            value: json!(es),
            version: None,
        },
        (WorkloadOp::Cas(..), Answer::Written { rows: 0, .. }) => Completion::Fail {
            error: CAS_MISMATCH.into(),
            value: op.value(),
        },
        (WorkloadOp::SetAdd(_), Answer::Written { .. }) => Completion::Ok {
            value: op.value(),
            version: None,
        },
        (_, Answer::Written { version, .. }) => Completion::Ok {
            value: op.value(),
            version: i64::try_from(version).ok().filter(|&v| v > 0),
        },
    }
}

#[async_trait::async_trait]
impl Client for MyKvClient {
    async fn invoke(&mut self, f: &str, key: Option<&str>, value: &Value) -> Completion {
        let (op, key) = match WorkloadOp::parse_keyed(f, key, value, self.set_ops) {
            Ok(parsed) => parsed,
            Err(refused) => return refused,
        };
        let node = if op.is_read() {
            self.router.read(&self.cfg)
        } else {
            self.router.write(&self.cfg)
        };
        self.sent = false;
        let timeout = Duration::from_millis(self.cfg.timeout_ms);
        let label = self.cfg.label(node);
        let (error, reason, broken) =
            match tokio::time::timeout(timeout, self.run(node, key, op)).await {
                Ok(Ok(answer)) => return answered(op, answer),
                Ok(Err(e)) => {
                    let reason = match self.sent {
                        false => Some(FailReason::Connect),
                        true => FailReason::of(&e, true),
                    };
                    let what = if self.sent { "" } else { "connecting: " };
                    (
                        format!("{label}: {what}{}", describe(&e)),
                        reason,
                        breaks_connection(&e),
                    )
                }
                Err(_) => {
                    let what = if self.sent { "" } else { " connecting" };
                    let reason = (!self.sent).then_some(FailReason::Connect);
                    (
                        format!("{label}: timed out after {} ms{what}", self.cfg.timeout_ms),
                        reason,
                        true,
                    )
                }
            };
        if broken {
            self.conns[node] = None;
        }
        match reason {
            Some(r) => Completion::Fail {
                error: format!("{}: {error}", r.as_str()),
                value: op.value(),
            },
            None if op.is_read() => Completion::Fail {
                error: format!("{}: {error}", FailReason::Other.as_str()),
                value: op.value(),
            },
            None => Completion::Info { error },
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
    use crate::options::ReadFrom;

    #[test]
    fn answers_become_completions_with_their_versions() {
        let c = answered(WorkloadOp::Read, Answer::Row(Some((Some(4), 7))));
        assert_eq!(c.op_type(), crate::history::OpType::Ok);
        assert!(matches!(c, Completion::Ok { ref value, version: Some(7) } if *value == json!(4)));
        let c = answered(WorkloadOp::Read, Answer::Row(None));
        assert!(matches!(c, Completion::Ok { ref value, version: None } if value.is_null()));
        let c = answered(
            WorkloadOp::Write(3),
            Answer::Written {
                rows: 2,
                version: 5,
            },
        );
        assert!(matches!(c, Completion::Ok { ref value, version: Some(5) } if *value == json!(3)));
        let c = answered(
            WorkloadOp::Cas(1, 2),
            Answer::Written {
                rows: 0,
                version: 0,
            },
        );
        assert_eq!(c.error(), Some(CAS_MISMATCH));
        let c = answered(
            WorkloadOp::SetAdd(9),
            Answer::Written {
                rows: 0,
                version: 0,
            },
        );
        assert_eq!(c.op_type(), crate::history::OpType::Ok);
        let c = answered(WorkloadOp::SetRead, Answer::Elements(vec![1, 2]));
        assert!(matches!(c, Completion::Ok { ref value, .. } if *value == json!([1, 2])));
    }

    fn unreachable(read_from: ReadFrom) -> MyKvClient {
        // Port 1 on loopback: connection refused, nothing was sent.
        MyKvClient::new(MyClientConfig {
            nodes: vec![super::super::conn::MyNode {
                name: "n1".into(),
                host: "127.0.0.1".into(),
            }],
            port: 1,
            own: 0,
            write_to: super::super::WriteTo::Primary,
            read_from,
            read_nodes: vec![],
            isolation: Default::default(),
            timeout_ms: 500,
            seed: 1,
        })
        .unwrap()
    }

    #[tokio::test]
    async fn unreachable_nodes_fail_writes_definitely_and_name_the_node() {
        let mut c = unreachable(ReadFrom::Primary);
        let done = c.invoke("write", Some("k"), &json!(1)).await;
        assert_eq!(done.op_type(), crate::history::OpType::Fail, "{done:?}");
        let e = done.error().unwrap();
        assert!(
            e.starts_with("connect: n1 (127.0.0.1:1): connecting"),
            "{e}"
        );
        let done = c.invoke("cas", Some("k"), &json!([1])).await;
        assert!(done.error().unwrap().contains("[old, new]"), "{done:?}");
        let done = c.invoke("write", None, &json!(1)).await;
        assert!(done.error().unwrap().contains("no key"), "{done:?}");
    }
}
