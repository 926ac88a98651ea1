//! PostgreSQL client for the register and set workloads, with tokio-postgres (no TLS).
//!
//! Owns: connections to the nodes of a primary/replica cluster (one per node, opened lazily and
//! reopened after an error or timeout), routing (writes and cas to the primary; reads per
//! `ReadFrom`), the register ops as SQL on one table, and classifying every error as *definitely
//! not applied* (`Fail`) or *unknown* (`Info`). Does not own starting the servers or creating the
//! table (`db` runs `SCHEMA_SQL`), retries (one attempt per op) or history writing.
//!
//! Register semantics on `kv(key text primary key, value bigint, version bigint not null)`:
//! - `read` → `SELECT value, version` → `Ok { value: int | null (absent), version: v | None }`.
//! - `write v` → upsert setting `version = kv.version + 1` (1 for a new key) in the same
//!   statement, `RETURNING version` → `Ok { value: v, version }`. The per-key version column is the
//!   session checker's version order: row locks serialize writers of a key on the primary.
//! - `cas [old, new]` → `UPDATE … SET value = new, version = version + 1 WHERE key = k AND value =
//!   old RETURNING version` → `Ok { value: [old, new], version }`, or with 0 rows
//!   `Fail { error: "cas-mismatch" }` (it ran and saw another value, or no row).
//!
//! Set semantics (`with_set_reads`, the set workload) on `set_elems(k text, e bigint, primary
//! key (k, e))`: `add e` → `INSERT … ON CONFLICT DO NOTHING` on the primary → `Ok { value: e }`
//! (errors classified as for a write); `read` → `SELECT e … WHERE k = $1`, routed like register
//! reads → `Ok { value: [elements] }`.
//!
//! LWW semantics (`with_lww`, the `lww` workload) on `lww(key, value, ts timestamptz)`: `write v`
//! → an upsert stamped with the primary's `clock_timestamp()` that keeps the row with the greater
//! timestamp (a write stamped older is dropped silently) → `Ok { value: v }` (no version: its
//! stamp may not be what is stored); `read` → `Ok { value, version: the row's timestamp in µs }`.
//! Both go to the primary whatever `--read-from` says: the primary's clock decides. A backward clock
//! step on the primary makes acknowledged writes vanish: the linearizability checker sees it.
//!
//! Routing (`ReadFrom`): `primary` reads the primary; `replica` a uniformly random replica *per
//! read* (from `read_nodes` when given), so successive reads of one session can hit replicas with
//! different lag; `any` a random node per read (from `read_nodes` when given); `own` the thread's
//! bound node. The choice comes from a seeded ChaCha8 stream per thread. The history's `node`
//! field stays the thread's bound node (the interpreter sets it); the node a failed op went to is
//! named in its `error`.
//!
//! Error classification. Reads never change state: every read error is `Fail`. For `write`/`cas`:
//!
//! | error                                                                 | completion |
//! |-----------------------------------------------------------------------|------------|
//! | bad op or argument (never sent)                                       | Fail       |
//! | connecting failed or timed out (refused, unreachable, auth, startup)  | Fail       |
//! | server `ERROR` with a SQLSTATE class that aborts the statement before | Fail       |
//! |   commit: 22, 23, 25 (e.g. 25006 read-only transaction on a replica), |            |
//! |   40 (40001 serialization failure, 40P01 deadlock), 42, 53, 54, 55,   |            |
//! |   0A, 3D, 3F, 28, and 57014 (canceled)                                |            |
//! | any other server error, `FATAL`/`PANIC` (e.g. 57P01 admin shutdown    | Info       |
//! |   while waiting for a synchronous standby: committed locally)         |            |
//! | connection closed or reset, IO error, timeout after sending           | Info       |
//!
//! In autocommit a statement's `ERROR` rolls its transaction back (PostgreSQL escalates errors
//! after the commit record to `PANIC`), so the definite classes are safe; the rest stay unknown.

use crate::client::{Client, ClientOpenError, Completion, WorkloadOp};
use crate::model::CAS_MISMATCH;
use crate::options::ReadFrom;
use rand::RngExt;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use std::time::Duration;
use tokio_postgres::{NoTls, Statement};

/// The schema the register and set workloads need (run once on the primary by `db::postgres`).
pub const SCHEMA_SQL: &str = "CREATE TABLE IF NOT EXISTS kv (key text PRIMARY KEY, value bigint, version bigint NOT NULL); \
     CREATE TABLE IF NOT EXISTS set_elems (k text, e bigint, PRIMARY KEY (k, e)); \
     CREATE TABLE IF NOT EXISTS txn_lists (k text PRIMARY KEY, v bigint[] NOT NULL); \
     CREATE TABLE IF NOT EXISTS lww (key text PRIMARY KEY, value bigint, ts timestamptz NOT NULL);";

/// LWW read (the `lww` workload): the value and its write timestamp (µs since the epoch).
const LWW_READ_SQL: &str =
    "SELECT value, (extract(epoch FROM ts) * 1000000)::bigint FROM lww WHERE key = $1";
/// LWW write: stamp the write with the server's wall clock (`clock_timestamp()`) and keep the
/// row with the greater timestamp, as applications that resolve conflicts by time do. A write
/// stamped older than the stored row is silently dropped; the statement answers with the
/// write's timestamp either way, as the application would see it.
const LWW_WRITE_SQL: &str = "WITH t AS (SELECT clock_timestamp() AS ts), \
     w AS (INSERT INTO lww (key, value, ts) SELECT $1::text, $2::bigint, t.ts FROM t \
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, ts = EXCLUDED.ts WHERE lww.ts < EXCLUDED.ts) \
     SELECT (extract(epoch FROM ts) * 1000000)::bigint FROM t";

const READ_SQL: &str = "SELECT value, version FROM kv WHERE key = $1";
const WRITE_SQL: &str = "INSERT INTO kv (key, value, version) VALUES ($1, $2, 1) \
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, version = kv.version + 1 \
     RETURNING version";
const SET_ADD_SQL: &str = "INSERT INTO set_elems (k, e) VALUES ($1, $2) ON CONFLICT DO NOTHING";
const SET_READ_SQL: &str = "SELECT e FROM set_elems WHERE k = $1";
const CAS_SQL: &str = "UPDATE kv SET value = $3, version = version + 1 WHERE key = $1 AND value = $2 RETURNING version";

/// One node the client may talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgNode {
    /// Node name, for error messages.
    pub name: String,
    /// Host or address.
    pub host: String,
}

/// Settings of one client (one worker thread).
#[derive(Debug, Clone)]
pub struct PgClientConfig {
    /// Every node of the cluster.
    pub nodes: Vec<PgNode>,
    /// TCP port on every node.
    pub port: u16,
    /// Index into `nodes` of the primary (writes and cas go there) until a failover.
    pub primary: usize,
    /// The promoted primary after a failover (shared with `db::postgres`); overrides `primary`.
    pub promoted: super::db::PrimarySlot,
    /// Index into `nodes` of the thread's bound node (`ReadFrom::Own`).
    pub own: usize,
    /// Where reads go.
    pub read_from: ReadFrom,
    /// Indices of the nodes `replica`/`any` reads may pick; empty = all replicas / all nodes.
    pub read_nodes: Vec<usize>,
    /// Per-op timeout (connecting included).
    pub timeout_ms: u64,
    /// Seed of the per-read node choice.
    pub seed: u64,
}

/// Whether an error leaves an op's effect unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Certainty {
    /// The op definitely did not take effect.
    NotApplied,
    /// It may have taken effect.
    Unknown,
}

/// Classify a server error response by its severity and SQLSTATE (see the module table).
pub fn classify_server_error(severity: &str, sqlstate: &str) -> Certainty {
    if severity != "ERROR" {
        return Certainty::Unknown;
    }
    const DEFINITE_CLASSES: [&str; 13] = [
        "22", "23", "25", "40", "42", "53", "54", "55", "0A", "3D", "3F", "28", "08",
    ];
    let class = sqlstate.get(..2).unwrap_or("");
    // 08 (connection exception) as an ERROR response comes from connection setup only.
    if DEFINITE_CLASSES.contains(&class) || sqlstate == "57014" || sqlstate == "57P03" {
        Certainty::NotApplied
    } else {
        Certainty::Unknown
    }
}

fn certainty_of(e: &tokio_postgres::Error) -> Certainty {
    match e.as_db_error() {
        Some(db) => classify_server_error(db.severity(), db.code().code()),
        None => Certainty::Unknown,
    }
}

pub(super) fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} {}: {}", db.severity(), db.code().code(), db.message()),
        None => crate::client::error_chain(e),
    }
}

struct Conn {
    client: tokio_postgres::Client,
    read: Statement,
    write: Statement,
    cas: Statement,
    set_add: Statement,
    set_read: Statement,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A register client over a PostgreSQL primary/replica cluster.
pub struct PgClient {
    cfg: PgClientConfig,
    conns: Vec<Option<Conn>>,
    rng: ChaCha8Rng,
    /// Set once the current op's statement was handed to the connection.
    sent: bool,
    /// Serve the set workload: `read` returns a set's elements, `add` inserts one.
    set_ops: bool,
    /// Serve the `lww` workload: reads and writes go to the `lww` table (last write wins by
    /// the server's `clock_timestamp()`); the version is the write timestamp in µs.
    lww: bool,
}

/// How messages name node `i`: `n2 (10.0.0.2:5432)`.
pub(super) fn node_label(cfg: &PgClientConfig, i: usize) -> String {
    let n = &cfg.nodes[i];
    format!("{} ({}:{})", n.name, n.host, cfg.port)
}

/// Connection settings for node `i`, as `application_name`.
pub(super) fn pg_config(
    cfg: &PgClientConfig,
    i: usize,
    application: &str,
) -> tokio_postgres::Config {
    let mut pg = tokio_postgres::Config::new();
    pg.host(&cfg.nodes[i].host)
        .port(cfg.port)
        .user("postgres")
        .dbname("postgres")
        .application_name(application)
        .connect_timeout(Duration::from_millis(cfg.timeout_ms));
    pg
}

impl PgClient {
    /// A client; connections open on first use. Fails on an empty node list, an index out of
    /// range or a zero timeout.
    pub fn new(cfg: PgClientConfig) -> Result<PgClient, ClientOpenError> {
        let n = cfg.nodes.len();
        if n == 0 {
            return Err(ClientOpenError::Config("no nodes".into()));
        }
        if cfg.primary >= n || cfg.own >= n || cfg.read_nodes.iter().any(|&i| i >= n) {
            return Err(ClientOpenError::Config(format!(
                "node index out of range (cluster of {n})"
            )));
        }
        if cfg.timeout_ms == 0 {
            return Err(ClientOpenError::Config(
                "timeout_ms must be positive".into(),
            ));
        }
        let rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        Ok(PgClient {
            conns: (0..n).map(|_| None).collect(),
            cfg,
            rng,
            sent: false,
            set_ops: false,
            lww: false,
        })
    }

    /// Serve the `lww` workload (register reads and writes, last write wins by timestamp).
    pub fn with_lww(mut self) -> PgClient {
        self.lww = true;
        self
    }

    /// Serve the set workload (`add` / `read` of a whole set) instead of the register one.
    pub fn with_set_reads(mut self) -> PgClient {
        self.set_ops = true;
        self
    }

    /// Index of the current primary: the promoted node after a failover, else the configured one.
    pub fn primary(&self) -> usize {
        let promoted = self
            .cfg
            .promoted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        promoted
            .and_then(|name| self.cfg.nodes.iter().position(|n| n.name == name))
            .unwrap_or(self.cfg.primary)
    }

    /// The node a read goes to now (draws from the client's seeded stream for replica/any).
    pub fn pick_read_node(&mut self) -> usize {
        let primary = self.primary();
        let candidates: Vec<usize> = match self.cfg.read_from {
            ReadFrom::Own => return self.cfg.own,
            ReadFrom::Primary => return primary,
            ReadFrom::Replica if self.cfg.read_nodes.is_empty() => (0..self.cfg.nodes.len())
                .filter(|&i| i != primary)
                .collect(),
            ReadFrom::Any if self.cfg.read_nodes.is_empty() => (0..self.cfg.nodes.len()).collect(),
            ReadFrom::Replica | ReadFrom::Any => self.cfg.read_nodes.clone(),
        };
        if candidates.is_empty() {
            return primary;
        }
        candidates[self.rng.random_range(0..candidates.len())]
    }

    fn label(&self, i: usize) -> String {
        node_label(&self.cfg, i)
    }

    async fn connect(&self, i: usize) -> Result<Conn, tokio_postgres::Error> {
        let (client, connection) = pg_config(&self.cfg, i, "shakedown").connect(NoTls).await?;
        let task = tokio::spawn(async move {
            let _ = connection.await;
        });
        let (read, write, cas, set_add, set_read) = match tokio::try_join!(
            client.prepare(READ_SQL),
            client.prepare(WRITE_SQL),
            client.prepare(CAS_SQL),
            client.prepare(SET_ADD_SQL),
            client.prepare(SET_READ_SQL)
        ) {
            Ok(s) => s,
            Err(e) => {
                task.abort();
                return Err(e);
            }
        };
        Ok(Conn {
            client,
            read,
            write,
            cas,
            set_add,
            set_read,
            task,
        })
    }

    /// Run one op on node `i`; errors carry whether the statement was sent.
    async fn run(&mut self, i: usize, key: &str, op: WorkloadOp) -> Completion {
        if self.conns[i].as_ref().is_some_and(|c| c.client.is_closed()) {
            self.conns[i] = None;
        }
        if self.conns[i].is_none() {
            match self.connect(i).await {
                Ok(c) => self.conns[i] = Some(c),
                Err(e) => {
                    return Completion::Fail {
                        error: format!("{}: connecting: {}", self.label(i), describe(&e)),
                        value: op.value(),
                    };
                }
            }
        }
        let conn = self.conns[i].as_ref().expect("connection just opened");
        self.sent = true;
        let result = match op {
            WorkloadOp::SetAdd(e) => conn
                .client
                .execute(&conn.set_add, &[&key, &e])
                .await
                .map(|_| None),
            WorkloadOp::SetRead => match conn.client.query(&conn.set_read, &[&key]).await {
                Ok(rows) => return set_read_completion(&rows),
                Err(e) => Err(e),
            },
            WorkloadOp::Read if self.lww => conn.client.query_opt(LWW_READ_SQL, &[&key]).await,
            WorkloadOp::Write(v) if self.lww => {
                conn.client.query_opt(LWW_WRITE_SQL, &[&key, &v]).await
            }
            WorkloadOp::Read => conn.client.query_opt(&conn.read, &[&key]).await,
            WorkloadOp::Write(v) => conn.client.query_opt(&conn.write, &[&key, &v]).await,
            WorkloadOp::Cas(old, new) => {
                conn.client.query_opt(&conn.cas, &[&key, &old, &new]).await
            }
        };
        match result {
            // The write's own stamp is not a version of what is stored (it may have been
            // dropped): an LWW write reports none; LWW reads report the stored row's stamp.
            Ok(_) if self.lww && matches!(op, WorkloadOp::Write(_)) => Completion::Ok {
                value: op.value(),
                version: None,
            },
            Ok(row) => ok_completion(op, row),
            Err(e) => {
                let certainty = certainty_of(&e);
                let error = format!("{}: {}", self.label(i), describe(&e));
                if e.as_db_error().is_none() || certainty == Certainty::Unknown {
                    // The connection may be broken or the session in an unknown state.
                    self.conns[i] = None;
                }
                match (op, certainty) {
                    (WorkloadOp::Read | WorkloadOp::SetRead, _) | (_, Certainty::NotApplied) => {
                        Completion::Fail {
                            error,
                            value: op.value(),
                        }
                    }
                    (_, Certainty::Unknown) => Completion::Info { error },
                }
            }
        }
    }
}

/// The completion of a set read: every row's element.
fn set_read_completion(rows: &[tokio_postgres::Row]) -> Completion {
    let elements: Result<Vec<i64>, String> = rows
        .iter()
        .map(|r| {
            r.try_get::<_, i64>(0)
                .map_err(|e| format!("undecodable set element: {e}"))
        })
        .collect();
    match elements {
        Ok(es) => Completion::Ok {
            value: json!(es),
            version: None,
        },
        Err(error) => Completion::Fail {
            error,
            value: Value::Null,
        },
    }
}

fn ok_completion(op: WorkloadOp, row: Option<tokio_postgres::Row>) -> Completion {
    let get = |row: &tokio_postgres::Row, col: usize| -> Result<Option<i64>, String> {
        row.try_get::<_, Option<i64>>(col)
            .map_err(|e| format!("undecodable column {col}: {e}"))
    };
    match (op, row) {
        (WorkloadOp::Read, None) => Completion::Ok {
            value: Value::Null,
            version: None,
        },
        // Set reads complete in `set_read_completion`; never reached.
        (WorkloadOp::SetRead, _) => Completion::Fail {
            error: "set read has no single row".into(),
            value: Value::Null,
        },
        (WorkloadOp::Read, Some(row)) => match (get(&row, 0), get(&row, 1)) {
            (Ok(value), Ok(version)) => Completion::Ok {
                value: value.map_or(Value::Null, |v| json!(v)),
                version,
            },
            (Err(e), _) | (_, Err(e)) => Completion::Fail {
                error: e,
                value: Value::Null,
            },
        },
        (WorkloadOp::Cas(..), None) => Completion::Fail {
            error: CAS_MISMATCH.into(),
            value: op.value(),
        },
        (WorkloadOp::Write(_), None) => Completion::Info {
            error: "write returned no row".into(),
        },
        // An insert that did nothing on conflict: the element is there either way.
        (WorkloadOp::SetAdd(_), None) => Completion::Ok {
            value: op.value(),
            version: None,
        },
        (_, Some(row)) => match get(&row, 0) {
            Ok(version) => Completion::Ok {
                value: op.value(),
                version,
            },
            Err(e) => Completion::Info { error: e },
        },
    }
}

#[async_trait::async_trait]
impl Client for PgClient {
    async fn invoke(&mut self, f: &str, key: Option<&str>, value: &Value) -> Completion {
        let (op, key) = match WorkloadOp::parse_keyed(f, key, value, self.set_ops) {
            Ok(parsed) => parsed,
            Err(refused) => return refused,
        };
        let node = match op {
            // LWW is decided by the primary's clock: an application reads it there.
            WorkloadOp::Read | WorkloadOp::SetRead if !self.lww => self.pick_read_node(),
            _ => self.primary(),
        };
        self.sent = false;
        let timeout = Duration::from_millis(self.cfg.timeout_ms);
        match tokio::time::timeout(timeout, self.run(node, key, op)).await {
            Ok(c) => c,
            Err(_) => {
                // The connection may hold a half-done request: drop it.
                self.conns[node] = None;
                let error = format!(
                    "{}: timed out after {} ms{}",
                    self.label(node),
                    self.cfg.timeout_ms,
                    if self.sent { "" } else { " connecting" }
                );
                if op.is_read() || !self.sent {
                    Completion::Fail {
                        error,
                        value: op.value(),
                    }
                } else {
                    Completion::Info { error }
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

    fn client(read_from: ReadFrom, read_nodes: Vec<usize>) -> PgClient {
        PgClient::new(PgClientConfig {
            nodes: (1..=5)
                .map(|i| PgNode {
                    name: format!("n{i}"),
                    host: format!("10.81.0.{i}"),
                })
                .collect(),
            port: 5432,
            primary: 0,
            promoted: Default::default(),
            own: 2,
            read_from,
            read_nodes,
            timeout_ms: 1000,
            seed: 7,
        })
        .unwrap()
    }

    #[test]
    fn server_errors_that_abort_the_statement_are_definite() {
        use Certainty::*;
        assert_eq!(classify_server_error("ERROR", "25006"), NotApplied);
        assert_eq!(classify_server_error("ERROR", "40001"), NotApplied);
        assert_eq!(classify_server_error("ERROR", "40P01"), NotApplied);
        assert_eq!(classify_server_error("ERROR", "23505"), NotApplied);
        assert_eq!(classify_server_error("ERROR", "57014"), NotApplied);
        assert_eq!(classify_server_error("ERROR", "57P03"), NotApplied);
        // Termination while waiting for a synchronous standby: committed locally.
        assert_eq!(classify_server_error("FATAL", "57P01"), Unknown);
        assert_eq!(classify_server_error("PANIC", "XX000"), Unknown);
        assert_eq!(classify_server_error("ERROR", "XX000"), Unknown);
        assert_eq!(classify_server_error("ERROR", "58030"), Unknown);
        assert_eq!(classify_server_error("ERROR", ""), Unknown);
    }

    #[test]
    fn reads_are_routed_per_read_from() {
        let mut c = client(ReadFrom::Primary, vec![]);
        assert!((0..50).all(|_| c.pick_read_node() == 0));
        let mut c = client(ReadFrom::Own, vec![]);
        assert!((0..50).all(|_| c.pick_read_node() == 2));
        let mut c = client(ReadFrom::Replica, vec![]);
        let picks: std::collections::BTreeSet<usize> =
            (0..200).map(|_| c.pick_read_node()).collect();
        assert_eq!(picks, [1, 2, 3, 4].into_iter().collect());
        let mut c = client(ReadFrom::Any, vec![]);
        let picks: std::collections::BTreeSet<usize> =
            (0..200).map(|_| c.pick_read_node()).collect();
        assert_eq!(picks, [0, 1, 2, 3, 4].into_iter().collect());
        let mut c = client(ReadFrom::Replica, vec![1]);
        assert!((0..50).all(|_| c.pick_read_node() == 1));
    }

    #[test]
    fn bad_configs_are_rejected() {
        let mut cfg = client(ReadFrom::Own, vec![]).cfg;
        cfg.primary = 9;
        assert!(PgClient::new(cfg.clone()).is_err());
        cfg.primary = 0;
        cfg.timeout_ms = 0;
        assert!(PgClient::new(cfg.clone()).is_err());
        cfg.timeout_ms = 1;
        cfg.nodes.clear();
        assert!(PgClient::new(cfg).is_err());
    }

    #[tokio::test]
    async fn unreachable_nodes_fail_writes_definitely() {
        // Port 1 on loopback: connection refused, nothing was sent.
        let mut c = PgClient::new(PgClientConfig {
            nodes: vec![PgNode {
                name: "n1".into(),
                host: "127.0.0.1".into(),
            }],
            port: 1,
            primary: 0,
            promoted: Default::default(),
            own: 0,
            read_from: ReadFrom::Primary,
            read_nodes: vec![],
            timeout_ms: 500,
            seed: 1,
        })
        .unwrap();
        let done = c.invoke("write", Some("k"), &json!(1)).await;
        assert_eq!(done.op_type(), crate::history::OpType::Fail, "{done:?}");
        assert!(
            done.error().unwrap().contains("n1 (127.0.0.1:1)"),
            "{done:?}"
        );
    }
}
