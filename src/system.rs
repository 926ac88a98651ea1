//! A system under test as the runner sees it: its `Db`, its readiness check and its client
//! factory, behind one small trait so `runner` does not name etcd or PostgreSQL.
//!
//! Owns the mapping from `TestConfig` (`--db`, `--read-from`, `--read-nodes`) to a system and its
//! per-thread clients. Does not own the systems themselves (`db::*`), the protocols (`client::*`)
//! or run sequencing (`runner`).

use crate::client::Client;
use crate::client::etcd::{EtcdClient, EtcdClientConfig};
use crate::client::postgres::{PgClient, PgClientConfig, PgNode};
use crate::config::{DbKind, ReadFrom, TestConfig};
use crate::node::Node;
use crate::control::Remote;
use crate::db::etcd::Etcd;
use crate::db::postgres::Postgres;
use crate::db::{Db, DbError};
use serde_json::{Value, json};
use std::sync::Arc;

/// A system under test: DB lifecycle plus its clients.
pub trait System: Db {
    /// Block until `node` is ready for clients (healthy, streaming, …).
    fn await_ready(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError>;
    /// The client of worker thread `thread` (bound to `nodes[thread % nodes.len()]`).
    fn client(
        &self,
        cfg: &TestConfig,
        thread: usize,
        nodes: &[Node],
    ) -> Result<Box<dyn Client>, String>;
    /// The settings recorded in test.json (`db.config`).
    fn config_json(&self, cluster: &[Node]) -> Value;
    /// An owned handle, for blocking tasks.
    fn to_arc(&self) -> Arc<dyn System>;
    /// This system as a plain `Db` (for the nemesis and cleanup).
    fn to_db(&self) -> Arc<dyn Db>;
}

/// The system `cfg` selects.
pub fn for_config(cfg: &TestConfig) -> Arc<dyn System> {
    match cfg.db {
        DbKind::Etcd => Arc::new(Etcd::new(cfg.etcd.clone())),
        DbKind::Postgres => Arc::new(Postgres::new(cfg.postgres.clone())),
    }
}

impl System for Etcd {
    fn await_ready(
        &self,
        remote: &dyn Remote,
        node: &Node,
        _cluster: &[Node],
    ) -> Result<(), DbError> {
        Etcd::await_ready(self, remote, node)
    }

    fn client(
        &self,
        cfg: &TestConfig,
        thread: usize,
        nodes: &[Node],
    ) -> Result<Box<dyn Client>, String> {
        let node = &nodes[thread % nodes.len()];
        let client = EtcdClient::new(EtcdClientConfig {
            endpoint: self.endpoint(node),
            read_mode: cfg.read_mode,
            timeout_ms: cfg.op_timeout_ms,
            key_prefix: format!("/shakedown/{}/", cfg.seed),
        })
        .map_err(|e| format!("{}: creating etcd client: {e}", node.name))?;
        let client = match cfg.read_from {
            // Each thread's member choices come from its own seeded stream.
            ReadFrom::Any => client
                .with_read_endpoints(
                    nodes.iter().map(|n| self.endpoint(n)).collect(),
                    cfg.seed ^ (thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                )
                .map_err(|e| format!("{}: creating etcd client: {e}", node.name))?,
            // The CLI admits only own and any for etcd.
            _ => client,
        };
        Ok(Box::new(client))
    }

    fn config_json(&self, _cluster: &[Node]) -> Value {
        json!(self.cfg)
    }

    fn to_arc(&self) -> Arc<dyn System> {
        Arc::new(self.clone())
    }

    fn to_db(&self) -> Arc<dyn Db> {
        Arc::new(self.clone())
    }
}

/// Index of each named node in `nodes`; the error names the unknown one.
pub fn node_indices(names: &[String], nodes: &[Node]) -> Result<Vec<usize>, String> {
    names
        .iter()
        .map(|name| {
            nodes
                .iter()
                .position(|n| &n.name == name)
                .ok_or_else(|| format!("--read-nodes: no node named {name:?}"))
        })
        .collect()
}

impl System for Postgres {
    fn await_ready(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        Postgres::await_ready(self, remote, node, cluster)
    }

    fn client(
        &self,
        cfg: &TestConfig,
        thread: usize,
        nodes: &[Node],
    ) -> Result<Box<dyn Client>, String> {
        let primary = self
            .primary(nodes)
            .and_then(|p| nodes.iter().position(|n| n.name == p.name))
            .ok_or_else(|| "postgres: the primary is not among the nodes".to_string())?;
        let client = PgClient::new(PgClientConfig {
            nodes: nodes
                .iter()
                .map(|n| PgNode {
                    name: n.name.clone(),
                    host: n.host.clone(),
                })
                .collect(),
            port: self.cfg.port,
            primary,
            promoted: self.promoted.clone(),
            own: thread % nodes.len(),
            read_from: cfg.read_from,
            read_nodes: node_indices(&cfg.read_nodes, nodes)?,
            timeout_ms: cfg.op_timeout_ms,
            seed: cfg.seed.wrapping_add(1000 + thread as u64),
        })
        .map_err(|e| format!("creating postgres client {thread}: {e}"))?;
        Ok(Box::new(client))
    }

    fn config_json(&self, cluster: &[Node]) -> Value {
        let mut v = json!(self.cfg);
        v["effective_synchronous_standby_names"] = json!(self.standby_names(cluster));
        v["primary_node"] = json!(self.primary(cluster).map(|n| n.name.clone()));
        v
    }

    fn to_arc(&self) -> Arc<dyn System> {
        Arc::new(self.clone())
    }

    fn to_db(&self) -> Arc<dyn Db> {
        Arc::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes() -> Vec<Node> {
        (1..=3)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.81.0.{i}"),
            })
            .collect()
    }

    #[test]
    fn read_nodes_resolve_to_indices_and_unknown_names_are_named() {
        let n = nodes();
        assert_eq!(
            node_indices(&["n3".into(), "n1".into()], &n).unwrap(),
            vec![2, 0]
        );
        let e = node_indices(&["n9".into()], &n).unwrap_err();
        assert!(e.contains("--read-nodes") && e.contains("n9"), "{e}");
    }

    #[test]
    fn postgres_system_builds_clients_and_records_settings() {
        let cfg = crate::cli::RunArgs::defaults(crate::cli::SandboxArgs {
            sandbox_name: "x".into(),
            sandbox_subnet: "10.81.0.0/24".into(),
            sandbox_nodes: 3,
        });
        let mut cfg = cfg.into_config().unwrap();
        cfg.db = DbKind::Postgres;
        cfg.postgres.synchronous_commit = crate::db::postgres::SynchronousCommit::RemoteApply;
        let sys = for_config(&cfg);
        assert_eq!(sys.name(), "postgres");
        let n = nodes();
        assert!(sys.client(&cfg, 4, &n).is_ok());
        let v = sys.config_json(&n);
        assert_eq!(v["effective_synchronous_standby_names"], "FIRST 1 (n2)");
        assert_eq!(v["primary_node"], "n1");
        assert_eq!(v["synchronous_commit"], "remote_apply");
        cfg.read_nodes = vec!["n7".into()];
        let e = sys.client(&cfg, 0, &n).err().unwrap();
        assert!(e.contains("n7"), "{e}");
        cfg.db = DbKind::Etcd;
        assert_eq!(for_config(&cfg).name(), "etcd");
    }
}
