//! Redis client for the register and set workloads, with the `redis` crate (tokio, multiplexed
//! connections) and its Sentinel support (`redis::sentinel`) for finding the primary.
//!
//! Owns: finding the primary as applications do — ask the Sentinels (the thread's own node's
//! first, then the others in order; the crate asks `SENTINEL MASTERS` and checks the named server
//! says `ROLE` master) — and following failovers: the Sentinels are asked again after any error
//! on the primary's connection (connection lost, timeout, `READONLY` from a demoted primary) and
//! whenever the last answer is older than [`REFRESH_MS`] (as Sentinel-aware client libraries
//! refresh their topology; a refresh that fails keeps the last answer). A client whose own
//! node's Sentinel is cut off with an old primary keeps writing to that primary while the others
//! follow the Sentinel majority to the new one: split brain, which is how a failover loses
//! acknowledged writes. Also owns routing reads (`ReadFrom`), the ops, `WAIT` after writes and
//! classifying every outcome. Does not own the servers (`db`), retries or history writing.
//!
//! Ops (keys are `shakedown:<seed>:<key>`):
//! - register: a hash per key with fields `value` and `version`; every write sets `value` and
//!   increments `version` in one Lua script (atomic on the server), so the version is the
//!   session checker's order, as PostgreSQL's version column (a new primary that missed writes
//!   hands out versions again: the checker sees the conflicts). `read` → `HMGET value version`
//!   → `Ok` (integer, or null when absent, with the version); `write v` → script → `Ok` with the
//!   new version; `cas [old, new]` → script that compares `value` first → `Ok`, or `Fail` with
//!   `cas-mismatch` when the value was not `old` (a definite negative, as for etcd and
//!   PostgreSQL).
//! - set: `add n` → `SADD` → `Ok`; `read` → `SMEMBERS` → `Ok` with a JSON array of integers
//!   (a member that is not an integer is kept as its string, for the checker to flag).
//!
//! `--redis-wait N`: every write that succeeded (`SET`, a matching cas, `SADD`) is followed by
//! `WAIT N timeout`. When fewer than N replicas acknowledged in time the write is applied on the
//! primary but not known to be replicated: a failover may still lose it, so it is `Info` (may or
//! may not have happened), with that reason — never `Fail` (it did happen on the primary) and
//! never `Ok` (the application asked for more than it got). `WAIT` is not a consensus protocol:
//! an acknowledged write can still be lost (a replica that acknowledged is not necessarily the
//! one Sentinel promotes).
//!
//! Error classification (reads never change state: every failed read is `Fail`):
//!
//! | outcome of a write                                                    | completion |
//! |-----------------------------------------------------------------------|------------|
//! | bad op or argument (never sent)                                       | Fail       |
//! | no Sentinel named a reachable primary; connecting failed or timed out | Fail       |
//! | an error reply from the server (`READONLY` on a demoted primary,      | Fail       |
//! |   `LOADING`, `MASTERDOWN`, …): Redis rejects the command whole        |            |
//! | connection lost, IO error or timeout after the command was sent       | Info       |
//! | the write succeeded but `WAIT` errored or counted too few replicas    | Info       |

use crate::client::{Client, ClientOpenError, Completion, WorkloadOp};
use crate::model::CAS_MISMATCH;
use crate::options::ReadFrom;
use rand::RngExt;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use redis::aio::MultiplexedConnection;
use redis::sentinel::Sentinel;
use redis::{AsyncConnectionConfig, ConnectionAddr, RedisError};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Age after which the client asks the Sentinels for the primary again, in ms.
pub const REFRESH_MS: u64 = 1000;

/// Write one register: set `value`, increment `version`; returns the new version.
pub const WRITE_LUA: &str = r"redis.call('HSET', KEYS[1], 'value', ARGV[1])
return redis.call('HINCRBY', KEYS[1], 'version', 1)";

/// Compare-and-set of one register, atomic on the server: the new version when `value` was
/// `ARGV[1]` (and is now `ARGV[2]`), else 0.
pub const CAS_LUA: &str = r"if redis.call('HGET', KEYS[1], 'value') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'value', ARGV[2])
  return redis.call('HINCRBY', KEYS[1], 'version', 1)
end
return 0";

/// One node the client may talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisNode {
    /// Node name, for error messages.
    pub name: String,
    /// Host or address.
    pub host: String,
}

/// Settings of one client (one worker thread).
#[derive(Debug, Clone)]
pub struct RedisClientConfig {
    /// Every node of the cluster (each runs Redis and a Sentinel).
    pub nodes: Vec<RedisNode>,
    /// Redis port on every node.
    pub port: u16,
    /// Sentinel port on every node.
    pub sentinel_port: u16,
    /// The first this many `nodes` run a Sentinel (at least 1).
    pub sentinels: usize,
    /// The name the Sentinels monitor.
    pub master_name: String,
    /// Index into `nodes` of the primary assumed for routing replica reads before the Sentinels
    /// were first asked.
    pub initial_primary: usize,
    /// Index into `nodes` of the thread's bound node (`ReadFrom::Own`, and its Sentinel is asked
    /// first).
    pub own: usize,
    /// Where reads go.
    pub read_from: ReadFrom,
    /// Indices of the nodes `replica`/`any` reads may pick; empty = all replicas / all nodes.
    pub read_nodes: Vec<usize>,
    /// Per-op timeout (discovery and connecting included).
    pub timeout_ms: u64,
    /// `WAIT` this many replicas after every write (0 = no `WAIT`).
    pub wait_replicas: u32,
    /// Timeout of that `WAIT`, in ms.
    pub wait_timeout_ms: u64,
    /// Prefix of every key.
    pub key_prefix: String,
    /// Seed of the per-read node choice.
    pub seed: u64,
}

/// The nodes whose Sentinels a client bound to node `own` asks, in order: its own first (when
/// it is one of the first `sentinels` nodes, which run them), then the others in cluster order.
fn sentinel_order(own: usize, sentinels: usize) -> Vec<usize> {
    std::iter::once(own)
        .filter(|&i| i < sentinels)
        .chain((0..sentinels).filter(|&i| i != own))
        .collect()
}

/// A Redis error in words: the server's reply (`READONLY You can't write…`) or the transport's.
pub(super) fn describe(e: &RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_string(),
        _ => crate::client::error_chain(e),
    }
}

/// Whether the server answered with an error reply (the command was rejected whole).
pub(super) fn is_server_reply(e: &RedisError) -> bool {
    e.code().is_some()
}

/// A register/set client over a Redis primary/replica cluster watched by Sentinels.
pub struct RedisClient {
    cfg: RedisClientConfig,
    sentinel: Sentinel,
    conns: Vec<Option<MultiplexedConnection>>,
    /// The primary the Sentinels last named, while its connection has not failed.
    primary: Option<usize>,
    /// When the Sentinels were last asked successfully.
    asked_at: Option<Instant>,
    /// The primary last known (kept after a failure, for routing replica reads).
    last_primary: usize,
    /// Whether this client serves the set workload (`read` = `SMEMBERS`).
    set: bool,
    write: redis::Script,
    cas: redis::Script,
    rng: ChaCha8Rng,
    /// Set once the current op's command was handed to a connection.
    sent: bool,
    /// The op in flight and the node it was sent to (`None`: the primary), for
    /// [`Client::timed_out`].
    current: Option<(Option<usize>, WorkloadOp)>,
}

/// Why an op did not complete, with whether its command reached a connection.
struct Failure {
    error: String,
    sent: bool,
    server_reply: bool,
}

impl RedisClient {
    /// A client; nothing is contacted until the first op. Fails on an empty node list, an index
    /// out of range or a zero timeout.
    pub fn new(cfg: RedisClientConfig, set: bool) -> Result<RedisClient, ClientOpenError> {
        let n = cfg.nodes.len();
        if n == 0 {
            return Err(ClientOpenError::Config("no nodes".into()));
        }
        if cfg.initial_primary >= n
            || cfg.own >= n
            || cfg.read_nodes.iter().any(|&i| i >= n)
            || !(1..=n).contains(&cfg.sentinels)
        {
            return Err(ClientOpenError::Config(format!(
                "node index out of range (cluster of {n})"
            )));
        }
        if cfg.timeout_ms == 0 {
            return Err(ClientOpenError::Config(
                "timeout_ms must be positive".into(),
            ));
        }
        let sentinels: Vec<ConnectionAddr> = sentinel_order(cfg.own, cfg.sentinels)
            .into_iter()
            .map(|i| ConnectionAddr::Tcp(cfg.nodes[i].host.clone(), cfg.sentinel_port))
            .collect();
        let sentinel = Sentinel::build(sentinels)
            .map_err(|e| ClientOpenError::Driver(format!("sentinel list: {}", describe(&e))))?;
        Ok(RedisClient {
            conns: (0..n).map(|_| None).collect(),
            primary: None,
            asked_at: None,
            last_primary: cfg.initial_primary,
            sentinel,
            set,
            write: redis::Script::new(WRITE_LUA),
            cas: redis::Script::new(CAS_LUA),
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            sent: false,
            current: None,
            cfg,
        })
    }

    /// The primary (asked of the Sentinels as for every op) and a connection to it, for the lock
    /// client (`systems::redis::lock`); the error says what failed (nothing was sent).
    pub(super) async fn primary_connection(
        &mut self,
    ) -> Result<(usize, MultiplexedConnection), String> {
        let i = self.discover().await.map_err(|f| f.error)?;
        let conn = self.connection(i).await.map_err(|f| f.error)?;
        Ok((i, conn))
    }

    /// After an error on node `i`: ask the Sentinels again next time and, unless the server
    /// replied (the connection is fine), reconnect.
    pub(super) fn forget(&mut self, i: usize, server_reply: bool) {
        if !server_reply {
            self.conns[i] = None;
        }
        self.primary = None;
    }

    /// The client's settings.
    pub(super) fn config(&self) -> &RedisClientConfig {
        &self.cfg
    }

    pub(super) fn label(&self, i: usize) -> String {
        let n = &self.cfg.nodes[i];
        format!("{} ({}:{})", n.name, n.host, self.cfg.port)
    }

    /// The node a read goes to now (draws from the client's seeded stream for replica/any), or
    /// `None` for the primary.
    fn pick_read_node(&mut self) -> Option<usize> {
        let primary = self.primary.unwrap_or(self.last_primary);
        let candidates: Vec<usize> = match self.cfg.read_from {
            ReadFrom::Own => return Some(self.cfg.own),
            ReadFrom::Primary => return None,
            ReadFrom::Replica if self.cfg.read_nodes.is_empty() => (0..self.cfg.nodes.len())
                .filter(|&i| i != primary)
                .collect(),
            ReadFrom::Any if self.cfg.read_nodes.is_empty() => (0..self.cfg.nodes.len()).collect(),
            ReadFrom::Replica | ReadFrom::Any => self.cfg.read_nodes.clone(),
        };
        if candidates.is_empty() {
            return None;
        }
        Some(candidates[self.rng.random_range(0..candidates.len())])
    }

    /// Ask the Sentinels for the primary: cached for [`REFRESH_MS`] or until its connection
    /// fails; when a refresh fails, the cached answer stays.
    async fn discover(&mut self) -> Result<usize, Failure> {
        let fresh = self
            .asked_at
            .is_some_and(|t| t.elapsed() < Duration::from_millis(REFRESH_MS));
        match (self.primary, fresh) {
            (Some(p), true) => Ok(p),
            (Some(p), false) => Ok(self.ask_sentinels().await.unwrap_or(p)),
            (None, _) => self.ask_sentinels().await,
        }
    }

    async fn ask_sentinels(&mut self) -> Result<usize, Failure> {
        let unsent = |error: String| Failure {
            error,
            sent: false,
            server_reply: false,
        };
        let client = self
            .sentinel
            .async_master_for(&self.cfg.master_name, None)
            .await
            .map_err(|e| {
                unsent(format!(
                    "asking the sentinels for the primary: {}",
                    describe(&e)
                ))
            })?;
        let host = match client.get_connection_info().addr() {
            ConnectionAddr::Tcp(host, _) => host.clone(),
            other => return Err(unsent(format!("sentinels named the primary {other}"))),
        };
        let i = self
            .cfg
            .nodes
            .iter()
            .position(|n| n.host == host)
            .ok_or_else(|| unsent(format!("sentinels named an unknown primary {host}")))?;
        self.primary = Some(i);
        self.last_primary = i;
        self.asked_at = Some(Instant::now());
        Ok(i)
    }

    async fn connection(&mut self, i: usize) -> Result<MultiplexedConnection, Failure> {
        if let Some(c) = &self.conns[i] {
            return Ok(c.clone());
        }
        let node = &self.cfg.nodes[i];
        let failed = |e: RedisError| Failure {
            error: format!("{}: connecting: {}", self.label(i), describe(&e)),
            sent: false,
            server_reply: false,
        };
        let client = redis::Client::open((node.host.as_str(), self.cfg.port)).map_err(failed)?;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(Duration::from_millis(self.cfg.timeout_ms)))
            // The op's bound (the interpreter's, `op_bound`) ends a reply that never comes.
            .set_response_timeout(None);
        let conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(failed)?;
        self.conns[i] = Some(conn.clone());
        Ok(conn)
    }

    /// Run `op` on node `i` (or the primary when `None`); returns the node used and the result.
    async fn run(
        &mut self,
        target: Option<usize>,
        key: &str,
        op: WorkloadOp,
    ) -> (Option<usize>, Completion) {
        let mut node = target;
        let result = async {
            let i = match target {
                Some(i) => i,
                None => self.discover().await?,
            };
            node = Some(i);
            let mut conn = self.connection(i).await?;
            self.sent = true;
            let sent_error = |e: RedisError| Failure {
                error: format!("{}: {}", self.label(i), describe(&e)),
                sent: true,
                server_reply: is_server_reply(&e),
            };
            let done = match op {
                WorkloadOp::Read => {
                    let (v, version): (Option<String>, Option<i64>) = redis::cmd("HMGET")
                        .arg(key)
                        .arg("value")
                        .arg("version")
                        .query_async(&mut conn)
                        .await
                        .map_err(sent_error)?;
                    Completion::Ok {
                        value: v.map_or(Value::Null, |s| member(&s)),
                        version,
                    }
                }
                WorkloadOp::SetRead => {
                    let members: Vec<String> = redis::cmd("SMEMBERS")
                        .arg(key)
                        .query_async(&mut conn)
                        .await
                        .map_err(sent_error)?;
                    Completion::Ok {
                        value: Value::Array(members.iter().map(|s| member(s)).collect()),
                        version: None,
                    }
                }
                WorkloadOp::Write(v) => {
                    let version: i64 = self
                        .write
                        .key(key)
                        .arg(v)
                        .invoke_async(&mut conn)
                        .await
                        .map_err(sent_error)?;
                    self.after_write(&mut conn, i, op, Some(version)).await
                }
                WorkloadOp::SetAdd(v) => {
                    let _added: i64 = redis::cmd("SADD")
                        .arg(key)
                        .arg(v)
                        .query_async(&mut conn)
                        .await
                        .map_err(sent_error)?;
                    self.after_write(&mut conn, i, op, None).await
                }
                WorkloadOp::Cas(old, new) => {
                    let version: i64 = self
                        .cas
                        .key(key)
                        .arg(old)
                        .arg(new)
                        .invoke_async(&mut conn)
                        .await
                        .map_err(sent_error)?;
                    if version > 0 {
                        self.after_write(&mut conn, i, op, Some(version)).await
                    } else {
                        Completion::Fail {
                            error: CAS_MISMATCH.into(),
                            value: op.value(),
                        }
                    }
                }
            };
            Ok::<Completion, Failure>(done)
        }
        .await;
        match result {
            Ok(done) => (node, done),
            Err(f) => (node, self.failed(node, target, op, f)),
        }
    }

    /// `WAIT` after a write that succeeded on the primary, when asked for.
    async fn after_write(
        &self,
        conn: &mut MultiplexedConnection,
        i: usize,
        op: WorkloadOp,
        version: Option<i64>,
    ) -> Completion {
        let ok = Completion::Ok {
            value: op.value(),
            version,
        };
        let want = self.cfg.wait_replicas;
        if want == 0 {
            return ok;
        }
        let acked: Result<i64, RedisError> = redis::cmd("WAIT")
            .arg(want)
            .arg(self.cfg.wait_timeout_ms)
            .query_async(conn)
            .await;
        match acked {
            Ok(n) if n >= i64::from(want) => ok,
            Ok(n) => Completion::Info {
                error: format!(
                    "{}: applied on the primary, but WAIT {want} {} counted {n} replica(s): may be lost in a failover",
                    self.label(i),
                    self.cfg.wait_timeout_ms
                ),
            },
            Err(e) => Completion::Info {
                error: format!(
                    "{}: applied on the primary, then WAIT failed: {}",
                    self.label(i),
                    describe(&e)
                ),
            },
        }
    }

    /// Classify a failure (see the module table) and forget what it may have broken.
    fn failed(
        &mut self,
        node: Option<usize>,
        target: Option<usize>,
        op: WorkloadOp,
        f: Failure,
    ) -> Completion {
        if let Some(i) = node
            && !f.server_reply
        {
            self.conns[i] = None;
        }
        if target.is_none() {
            // Any error on the primary's path: ask the Sentinels again next time.
            self.primary = None;
        }
        if op.is_read() || !f.sent || f.server_reply {
            Completion::Fail {
                error: f.error,
                value: op.value(),
            }
        } else {
            Completion::Info { error: f.error }
        }
    }
}

/// A stored member or value as JSON: the integer it spells, else the string.
fn member(s: &str) -> Value {
    s.parse::<i64>().map_or_else(|_| json!(s), |v| json!(v))
}

#[async_trait::async_trait]
impl Client for RedisClient {
    async fn invoke(&mut self, f: &str, key: Option<&str>, value: &Value) -> Completion {
        let (op, key) = match WorkloadOp::parse_keyed(f, key, value, self.set) {
            Ok(parsed) => parsed,
            Err(refused) => return refused,
        };
        let key = [self.cfg.key_prefix.as_str(), key].concat();
        let target = if op.is_read() {
            self.pick_read_node()
        } else {
            None
        };
        self.sent = false;
        // Bounded by the interpreter (`op_bound`); a timeout ends in `timed_out`.
        self.current = Some((target, op));
        let (_, done) = self.run(target, &key, op).await;
        self.current = None;
        done
    }

    fn op_bound(&self) -> Option<Duration> {
        Some(Duration::from_millis(self.cfg.timeout_ms))
    }

    fn timed_out(&mut self, after: Duration) -> Completion {
        let Some((target, op)) = self.current.take() else {
            return Completion::timed_out(after);
        };
        let sent = self.sent;
        let node = target.or(self.primary);
        let place = node.map_or_else(|| "the primary".to_string(), |i| self.label(i));
        let error = format!(
            "{place}: timed out after {} ms{}",
            after.as_millis(),
            if sent { "" } else { " before sending" }
        );
        self.failed(
            node,
            target,
            op,
            Failure {
                error,
                sent,
                server_reply: false,
            },
        )
    }

    async fn close(&mut self) {
        self.conns.iter_mut().for_each(|c| *c = None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(read_from: ReadFrom, read_nodes: Vec<usize>) -> RedisClientConfig {
        RedisClientConfig {
            nodes: (1..=5)
                .map(|i| RedisNode {
                    name: format!("n{i}"),
                    host: format!("10.87.0.{i}"),
                })
                .collect(),
            port: 6379,
            sentinel_port: 26379,
            sentinels: 5,
            master_name: "shakedown".into(),
            initial_primary: 0,
            own: 2,
            read_from,
            read_nodes,
            timeout_ms: 1000,
            wait_replicas: 0,
            wait_timeout_ms: 100,
            key_prefix: "shakedown:7:".into(),
            seed: 7,
        }
    }

    #[test]
    fn set_members_read_back_as_integers_when_they_are() {
        assert_eq!(member("12"), json!(12));
        assert_eq!(member("x"), json!("x"));
    }

    #[test]
    fn reads_are_routed_per_read_from() {
        let mut c = RedisClient::new(config(ReadFrom::Primary, vec![]), false).unwrap();
        assert!((0..50).all(|_| c.pick_read_node().is_none()));
        let mut c = RedisClient::new(config(ReadFrom::Own, vec![]), false).unwrap();
        assert!((0..50).all(|_| c.pick_read_node() == Some(2)));
        let mut c = RedisClient::new(config(ReadFrom::Replica, vec![]), false).unwrap();
        let picks: std::collections::BTreeSet<Option<usize>> =
            (0..200).map(|_| c.pick_read_node()).collect();
        assert_eq!(picks, [1, 2, 3, 4].into_iter().map(Some).collect());
        // After a failover to n4 the replicas are the others.
        c.last_primary = 3;
        let picks: std::collections::BTreeSet<Option<usize>> =
            (0..200).map(|_| c.pick_read_node()).collect();
        assert_eq!(picks, [0, 1, 2, 4].into_iter().map(Some).collect());
        let mut c = RedisClient::new(config(ReadFrom::Any, vec![4]), false).unwrap();
        assert!((0..50).all(|_| c.pick_read_node() == Some(4)));
    }

    #[test]
    fn bad_configs_are_rejected() {
        let mut cfg = config(ReadFrom::Own, vec![]);
        cfg.own = 9;
        assert!(RedisClient::new(cfg.clone(), false).is_err());
        cfg.own = 0;
        cfg.timeout_ms = 0;
        assert!(RedisClient::new(cfg.clone(), false).is_err());
        cfg.timeout_ms = 1;
        for k in [0, 6] {
            cfg.sentinels = k;
            assert!(RedisClient::new(cfg.clone(), false).is_err(), "{k}");
        }
        cfg.sentinels = 5;
        cfg.nodes.clear();
        assert!(RedisClient::new(cfg, false).is_err());
    }

    #[test]
    fn the_own_sentinel_is_asked_first_and_only_sentinel_nodes_are_asked() {
        assert_eq!(sentinel_order(2, 5), [2, 0, 1, 3, 4]);
        assert_eq!(sentinel_order(1, 3), [1, 0, 2]);
        // A node without a Sentinel asks the Sentinel nodes in cluster order.
        assert_eq!(sentinel_order(40, 3), [0, 1, 2]);
    }

    #[tokio::test]
    async fn writes_without_a_reachable_sentinel_fail_definitely() {
        // Port 1 on loopback: connection refused, nothing was sent.
        let mut cfg = config(ReadFrom::Own, vec![]);
        cfg.nodes = vec![RedisNode {
            name: "n1".into(),
            host: "127.0.0.1".into(),
        }];
        cfg.own = 0;
        cfg.sentinels = 1;
        cfg.port = 1;
        cfg.sentinel_port = 1;
        let mut c = RedisClient::new(cfg, false).unwrap();
        let done = c.invoke("write", Some("k"), &json!(1)).await;
        assert_eq!(done.op_type(), crate::history::OpType::Fail, "{done:?}");
        assert!(done.error().unwrap().contains("sentinels"), "{done:?}");
        let done = c.invoke("read", Some("k"), &Value::Null).await;
        assert_eq!(done.op_type(), crate::history::OpType::Fail, "{done:?}");
        assert!(
            done.error().unwrap().contains("n1 (127.0.0.1:1)"),
            "{done:?}"
        );
    }
}
