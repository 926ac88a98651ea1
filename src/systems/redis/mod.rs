//! Redis with Sentinel as a system under test: its flags (`--redis-dir`, `--redis-quorum`,
//! `--redis-sentinels`,
//! `--redis-down-after-ms`, `--redis-failover-timeout-ms`, `--redis-wait`,
//! `--redis-wait-timeout-ms`), its settings (`RedisConfig`), what it can serve (`validate`) and
//! its per-thread clients.
//!
//! Owns the `System` impl of Redis. The servers and Sentinels on the nodes are `db`; the client
//! (primary found through the Sentinels, failovers followed, `WAIT`) is `client`; the client-only
//! load loop for `shakedown bench --db redis` is `bare_loop`.

pub mod bare_loop;
pub mod client;
pub mod db;
pub mod lock;

pub use db::{MASTER_NAME, Redis, RedisConfig};

use super::{RunOptions, Supports, System, SystemArgs, SystemConfig, SystemSettings};
use crate::client::{Client, ClientCtx, ClientOpenError};
use crate::control::Remote;
use crate::db::{Db, DbError};
use crate::node::Node;
use crate::options::{ConfigError, ReadFrom, ReadMode};
use crate::spec::WorkloadSpec;
use client::{RedisClient, RedisClientConfig, RedisNode};
use serde_json::{Value, json};
use std::sync::Arc;

/// The `--db` name.
pub const NAME: &str = "redis";

/// The set workload's kind (`WorkloadSpec::kind`).
const SET_KIND: &str = "set";

/// What Redis serves: register and set (no list append), the default read mode (reads are
/// routed by `--read-from`; none is linearizable under failover), reads anywhere.
pub const SUPPORTS: Supports = Supports {
    workloads: &[
        "register",
        SET_KIND,
        crate::generator::lock::KIND,
        crate::generator::lock::FENCED_KIND,
    ],
    read_modes: &[ReadMode::Linearizable],
    read_from: &[
        ReadFrom::Own,
        ReadFrom::Primary,
        ReadFrom::Replica,
        ReadFrom::Any,
    ],
    read_nodes: true,
};

/// Redis's flags.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Redis (--db redis)")]
pub struct RedisArgs {
    /// Directory on each node for Redis and Sentinel configs, data, logs and pidfiles.
    #[arg(long, default_value = "/tmp/shakedown/redis")]
    pub redis_dir: String,
    /// Sentinels that must agree the primary is down before a failover (default: a majority of
    /// the Sentinels).
    #[arg(long)]
    pub redis_quorum: Option<u32>,
    /// Run Sentinels on the first N nodes only (default: one on every node). Three or five, as
    /// in production, for big clusters: one Sentinel per node costs N² connections.
    #[arg(long, value_name = "N")]
    pub redis_sentinels: Option<u32>,
    /// Sentinel `down-after-milliseconds`.
    #[arg(long, default_value_t = 2000)]
    pub redis_down_after_ms: u64,
    /// Sentinel `failover-timeout`, in ms.
    #[arg(long, default_value_t = 6000)]
    pub redis_failover_timeout_ms: u64,
    /// Issue `WAIT N` after every write; a write fewer than N replicas acknowledged is info.
    #[arg(long, default_value_t = 0)]
    pub redis_wait: u32,
    /// Timeout of that `WAIT`, in ms.
    #[arg(long, default_value_t = 500)]
    pub redis_wait_timeout_ms: u64,
    /// `appendfsync` of the append-only file: everysec (fsync once a second), always (before
    /// every reply) or no (leave it to the OS). What a `power-loss` can take.
    #[arg(long, default_value = "everysec", value_parser = ["everysec", "always", "no"])]
    pub redis_appendfsync: String,
}

impl SystemArgs for RedisArgs {
    const NAME: &'static str = NAME;
    const LABEL: &'static str = "Redis";

    fn into_config(self) -> Result<SystemConfig, ConfigError> {
        let cfg = RedisConfig {
            base_dir: self.redis_dir,
            quorum: self.redis_quorum,
            sentinels: self.redis_sentinels,
            down_after_ms: self.redis_down_after_ms,
            failover_timeout_ms: self.redis_failover_timeout_ms,
            wait_replicas: self.redis_wait,
            wait_timeout_ms: self.redis_wait_timeout_ms,
            appendfsync: self.redis_appendfsync,
            ..RedisConfig::default()
        };
        if cfg.down_after_ms == 0 || cfg.failover_timeout_ms == 0 {
            return Err(ConfigError::new(
                "--redis-down-after-ms",
                "Sentinel's down-after and failover timeouts must be positive",
            ));
        }
        if cfg.wait_replicas > 0 && cfg.wait_timeout_ms == 0 {
            return Err(ConfigError::new(
                "--redis-wait-timeout-ms",
                "WAIT with timeout 0 blocks until the replicas answer: give a positive timeout",
            ));
        }
        Ok(SystemConfig::Redis(cfg))
    }
}

impl SystemSettings for RedisConfig {
    fn name(&self) -> &'static str {
        NAME
    }

    fn open(&self) -> Arc<dyn System> {
        Arc::new(Redis::new(self.clone()))
    }

    fn rerun_args(&self) -> Vec<String> {
        let d = RedisConfig::default();
        let mut parts = Vec::new();
        if let Some(q) = self.quorum {
            parts.push(format!("--redis-quorum {q}"));
        }
        if let Some(k) = self.sentinels {
            parts.push(format!("--redis-sentinels {k}"));
        }
        if self.down_after_ms != d.down_after_ms {
            parts.push(format!("--redis-down-after-ms {}", self.down_after_ms));
        }
        if self.failover_timeout_ms != d.failover_timeout_ms {
            parts.push(format!(
                "--redis-failover-timeout-ms {}",
                self.failover_timeout_ms
            ));
        }
        if self.wait_replicas != d.wait_replicas {
            parts.push(format!("--redis-wait {}", self.wait_replicas));
        }
        if self.wait_timeout_ms != d.wait_timeout_ms {
            parts.push(format!("--redis-wait-timeout-ms {}", self.wait_timeout_ms));
        }
        if self.appendfsync != d.appendfsync {
            parts.push(format!("--redis-appendfsync {}", self.appendfsync));
        }
        parts
    }
}

impl System for Redis {
    fn validate(&self, workload: &WorkloadSpec, options: &RunOptions) -> Result<(), ConfigError> {
        SUPPORTS.check(self, workload, options)?;
        self.cfg
            .check_sentinels(options.node_count)
            .map_err(|m| ConfigError::new("--redis-sentinels", m))?;
        self.cfg
            .check_quorum(options.node_count)
            .map_err(|m| ConfigError::new("--redis-quorum", m))?;
        if self.cfg.wait_replicas as usize >= options.node_count.max(1) {
            return Err(ConfigError::new(
                "--redis-wait",
                format!(
                    "WAIT {}: a cluster of {} nodes has {} replicas",
                    self.cfg.wait_replicas,
                    options.node_count,
                    options.node_count.saturating_sub(1)
                ),
            ));
        }
        Ok(())
    }

    fn await_ready(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        Redis::await_ready(self, remote, node, cluster)
    }

    fn await_recovered(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        Redis::await_recovered(self, remote, node, cluster)
    }

    fn client(&self, ctx: &ClientCtx) -> Result<Box<dyn Client>, ClientOpenError> {
        if crate::generator::lock::is_lock_kind(&ctx.workload_kind) {
            let redis = self.redis_client(ctx, false)?;
            return Ok(Box::new(lock::RedisLockClient::new(redis, ctx.thread)));
        }
        Ok(Box::new(
            self.redis_client(ctx, ctx.workload_kind == SET_KIND)?,
        ))
    }

    fn config_json(&self, cluster: &[Node]) -> Value {
        let mut v = json!(self.cfg);
        v["sentinel_nodes"] = json!(
            self.cfg
                .sentinel_nodes(cluster)
                .iter()
                .map(|n| &n.name)
                .collect::<Vec<_>>()
        );
        v["effective_quorum"] = json!(self.cfg.effective_quorum(cluster.len()));
        v["primary_node"] = json!(self.initial_primary(cluster).map(|n| n.name.clone()));
        v["master_name"] = json!(MASTER_NAME);
        v
    }

    fn to_arc(&self) -> Arc<dyn System> {
        Arc::new(self.clone())
    }

    fn to_db(&self) -> Arc<dyn Db> {
        Arc::new(self.clone())
    }
}

impl Redis {
    /// The client of one worker thread; `set` makes `read` a set read (`SMEMBERS`).
    pub fn redis_client(&self, ctx: &ClientCtx, set: bool) -> Result<RedisClient, ClientOpenError> {
        let nodes = &ctx.nodes;
        let initial_primary = self
            .initial_primary(nodes)
            .and_then(|p| nodes.iter().position(|n| n.name == p.name))
            .ok_or_else(|| {
                ClientOpenError::Config("redis: the primary is not among the nodes".to_string())
            })?;
        RedisClient::new(
            RedisClientConfig {
                nodes: nodes
                    .iter()
                    .map(|n| RedisNode {
                        name: n.name.clone(),
                        host: n.host.clone(),
                    })
                    .collect(),
                port: self.cfg.port,
                sentinel_port: self.cfg.sentinel_port,
                sentinels: self.cfg.sentinel_count(nodes.len()),
                master_name: MASTER_NAME.into(),
                initial_primary,
                own: ctx.node,
                read_from: ctx.read_from,
                read_nodes: ctx.read_node_indices()?,
                timeout_ms: ctx.op_timeout_ms,
                wait_replicas: self.cfg.wait_replicas,
                wait_timeout_ms: self.cfg.wait_timeout_ms,
                key_prefix: format!("shakedown:{}:", ctx.seed),
                seed: ctx.seed.wrapping_add(2000 + ctx.thread as u64),
            },
            set,
        )
        .map_err(|e| e.context(format_args!("creating redis client {}", ctx.thread)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes() -> Vec<Node> {
        (1..=3)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.87.0.{i}"),
            })
            .collect()
    }

    fn ctx(thread: usize, read_nodes: &[&str]) -> ClientCtx {
        let nodes = nodes();
        ClientCtx {
            thread,
            node: thread % nodes.len(),
            nodes,
            seed: 7,
            op_timeout_ms: 1000,
            read_mode: ReadMode::Linearizable,
            read_from: ReadFrom::Replica,
            read_nodes: read_nodes.iter().map(|s| s.to_string()).collect(),
            workload_kind: "register".into(),
        }
    }

    #[test]
    fn redis_system_builds_clients_and_records_settings() {
        let cfg = SystemConfig::Redis(RedisConfig {
            quorum: Some(2),
            wait_replicas: 1,
            ..Default::default()
        });
        let sys = cfg.open();
        assert_eq!(sys.name(), "redis");
        assert!(sys.client(&ctx(4, &["n3", "n1"])).is_ok());
        let v = sys.config_json(&nodes());
        assert_eq!(v["effective_quorum"], 2);
        assert_eq!(v["primary_node"], "n1");
        assert_eq!(v["wait_replicas"], 1);
        let e = sys.client(&ctx(0, &["n7"])).err().unwrap();
        assert!(e.is_config(), "{e:?}");
        let e = e.to_string();
        assert!(e.contains("--read-nodes") && e.contains("n7"), "{e}");
        assert_eq!(
            cfg.rerun_args(),
            vec!["--redis-quorum 2".to_string(), "--redis-wait 1".to_string()]
        );
    }

    #[test]
    fn validate_refuses_impossible_quorums_and_waits() {
        let register = crate::spec::load_workload("register").unwrap();
        let append = crate::spec::load_workload("list-append").unwrap();
        let nemesis = crate::spec::load_nemesis("partition,kill,pause,promote").unwrap();
        let options = |node_count| RunOptions {
            read_mode: ReadMode::Linearizable,
            read_from: ReadFrom::Primary,
            read_nodes: &[],
            nemesis: &nemesis,
            nemesis_name: "test",
            node_count,
            sandbox: false,
            run_s: 60.0,
        };
        let open = |c: RedisConfig| SystemConfig::Redis(c).open();
        open(RedisConfig::default())
            .validate(&register, &options(5))
            .unwrap();
        let e = open(RedisConfig::default())
            .validate(&append, &options(5))
            .unwrap_err();
        assert_eq!(e.what, "--workload");
        assert!(e.message.contains("redis"), "{e}");
        for q in [0, 6] {
            let e = open(RedisConfig {
                quorum: Some(q),
                ..Default::default()
            })
            .validate(&register, &options(5))
            .unwrap_err();
            assert_eq!(e.what, "--redis-quorum", "{e}");
        }
        let e = open(RedisConfig {
            wait_replicas: 5,
            ..Default::default()
        })
        .validate(&register, &options(5))
        .unwrap_err();
        assert_eq!(e.what, "--redis-wait", "{e}");
        assert!(e.message.contains("4 replicas"), "{e}");
    }
}
