//! MariaDB as a system under test, one folder for both topologies that share its server config
//! and clients: `--db galera` (a multi-primary Galera 4 cluster, every node accepting reads and
//! writes) and `--db mariadb` (the first node a primary, the others asynchronous GTID replicas;
//! `replication`). Owns their flags (`--mariadb-dir`, the server knobs and the shared
//! `--isolation` for both; `--write-to` and `--wsrep-sync-wait` for Galera only), their
//! settings (`MariaDbConfig`, `ReplicatedConfig`), what each can serve (`validate`), the
//! consistency model each configuration claims (`claimed_consistency`) and which per-thread
//! client serves a workload (`txn` for list-append, `kv` for register and set, both over
//! `conn`). Does not own the servers' lifecycle (`db`, `replication`).

pub mod conn;
pub mod db;
pub mod kv;
pub mod replication;
pub mod txn;

pub use db::{MariaDb, MariaDbConfig};
pub use replication::Topology;

use super::{RunOptions, Supports, System, SystemArgs, SystemConfig, SystemSettings};
use crate::client::{Client, ClientCtx, ClientOpenError};
use crate::control::Remote;
use crate::db::{Db, DbError};
use crate::node::Node;
use crate::options::{ConfigError, ReadFrom, ReadMode};
use crate::spec::WorkloadSpec;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;

/// The `--db` name of the Galera topology.
pub const GALERA: &str = "galera";
/// The `--db` name of the primary with asynchronous replicas.
pub const MARIADB: &str = "mariadb";

/// The workloads both topologies' clients serve.
const WORKLOADS: &[&str] = &[
    "register",
    crate::generator::set::KIND,
    crate::generator::txn::KIND,
];

/// What Galera serves: writes and transactions where `--write-to` sends them, register and set
/// reads on the thread's node, the first node or any node.
pub const GALERA_SUPPORTS: Supports = Supports {
    workloads: WORKLOADS,
    read_modes: &[ReadMode::Linearizable],
    read_from: &[ReadFrom::Own, ReadFrom::Primary, ReadFrom::Any],
    read_nodes: true,
};

/// What `--db mariadb` serves: writes and transactions on the primary, register and set reads
/// wherever `--read-from` says.
pub const MARIADB_SUPPORTS: Supports = Supports {
    workloads: WORKLOADS,
    read_modes: &[ReadMode::Linearizable],
    read_from: &[
        ReadFrom::Own,
        ReadFrom::Primary,
        ReadFrom::Replica,
        ReadFrom::Any,
    ],
    read_nodes: true,
};

/// Where a thread's transactions go (`--write-to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum WriteTo {
    /// The thread's own node (every node takes writes: multi-primary).
    #[default]
    Own,
    /// The first node only (a single writer node).
    Primary,
    /// A random node per transaction.
    Any,
}

impl WriteTo {
    /// The flag value.
    pub fn as_str(self) -> &'static str {
        match self {
            WriteTo::Own => "own",
            WriteTo::Primary => "primary",
            WriteTo::Any => "any",
        }
    }
}

/// `innodb_flush_log_at_trx_commit` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FlushLogArg {
    /// Write and flush the redo log about once a second.
    #[value(name = "0")]
    Zero,
    /// Write and flush at every commit (the default).
    #[value(name = "1")]
    One,
    /// Write at every commit, flush about once a second.
    #[value(name = "2")]
    Two,
}

impl FlushLogArg {
    fn value(self) -> u8 {
        match self {
            FlushLogArg::Zero => 0,
            FlushLogArg::One => 1,
            FlushLogArg::Two => 2,
        }
    }
}

/// Galera's flags. `--isolation` is shared with PostgreSQL (same flag, same values);
/// `--mariadb-dir`, `--innodb-flush-log-at-trx-commit`, `--sync-binlog`,
/// `--innodb-snapshot-isolation` and `--isolation` with `--db mariadb` ([`MariaDbArgs`]).
#[derive(Debug, Clone, clap::Args)]
#[command(
    next_help_heading = "Galera and MariaDB (--db galera; the shared ones also --db mariadb)"
)]
pub struct GaleraArgs {
    /// Directory on each node for MariaDB's config, data, socket, pidfiles and logs.
    #[arg(long, default_value = "/tmp/shakedown/mariadb")]
    pub mariadb_dir: String,
    /// Where each thread's transactions go: its own node (multi-primary), the first node
    /// (a single writer), or a random node per transaction.
    #[arg(long, value_enum, default_value_t = WriteTo::Own)]
    pub write_to: WriteTo,
    /// `innodb_flush_log_at_trx_commit` on every node.
    #[arg(long, value_enum, default_value_t = FlushLogArg::One)]
    pub innodb_flush_log_at_trx_commit: FlushLogArg,
    /// `sync_binlog` on every node, with the binary log on (default: no binary log).
    #[arg(long)]
    pub sync_binlog: Option<u32>,
    /// `wsrep_sync_wait` on every node (0 = no causality checks; 1 = before reads; up to 15).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=15))]
    pub wsrep_sync_wait: u8,
    /// `innodb_snapshot_isolation=ON`: at repeatable read, a write to a row changed since the
    /// transaction's read view fails (error 1020) instead of overwriting it.
    #[arg(long)]
    pub innodb_snapshot_isolation: bool,
    /// Isolation level of each transaction of `--workload txn` (PostgreSQL's default:
    /// serializable; Galera's: repeatable-read).
    #[arg(long, value_enum)]
    pub isolation: Option<super::postgres::IsolationArg>,
}

/// `--db mariadb`'s flags: the server knobs it shares with Galera (same ids and values as
/// [`GaleraArgs`]'s, so each is one flag on the command line).
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "MariaDB (--db mariadb)")]
pub struct MariaDbArgs {
    /// Directory on each node for MariaDB's config, data, socket, pidfiles and logs.
    #[arg(long, default_value = "/tmp/shakedown/mariadb")]
    pub mariadb_dir: String,
    /// `innodb_flush_log_at_trx_commit` on every node.
    #[arg(long, value_enum, default_value_t = FlushLogArg::One)]
    pub innodb_flush_log_at_trx_commit: FlushLogArg,
    /// `sync_binlog` on every node (default: the server's).
    #[arg(long)]
    pub sync_binlog: Option<u32>,
    /// `innodb_snapshot_isolation=ON`: at repeatable read, a write to a row changed since the
    /// transaction's read view fails (error 1020) instead of overwriting it.
    #[arg(long)]
    pub innodb_snapshot_isolation: bool,
    /// Isolation level of each transaction of `--workload txn`.
    #[arg(long, value_enum)]
    pub isolation: Option<super::postgres::IsolationArg>,
}

impl SystemArgs for MariaDbArgs {
    const NAME: &'static str = MARIADB;
    const LABEL: &'static str = "MariaDB";

    fn into_config(self) -> Result<SystemConfig, ConfigError> {
        Ok(SystemConfig::Mariadb(ReplicatedConfig(MariaDbConfig {
            topology: Topology::Replicated,
            base_dir: self.mariadb_dir,
            flush_log_at_trx_commit: self.innodb_flush_log_at_trx_commit.value(),
            sync_binlog: self.sync_binlog,
            snapshot_isolation: self.innodb_snapshot_isolation,
            isolation: self.isolation.map(Into::into),
            ..MariaDbConfig::default()
        })))
    }
}

/// The settings of `--db mariadb`: MariaDB's settings, opened as a primary with asynchronous
/// replicas (recorded in test.json exactly as Galera's are; the `--db` name tells them apart).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(transparent)]
pub struct ReplicatedConfig(pub MariaDbConfig);

impl From<super::postgres::IsolationArg> for txn::Isolation {
    fn from(a: super::postgres::IsolationArg) -> Self {
        use super::postgres::IsolationArg as A;
        match a {
            A::ReadCommitted => txn::Isolation::ReadCommitted,
            A::RepeatableRead => txn::Isolation::RepeatableRead,
            A::Serializable => txn::Isolation::Serializable,
        }
    }
}

impl SystemArgs for GaleraArgs {
    const NAME: &'static str = GALERA;
    const LABEL: &'static str = "Galera";

    fn into_config(self) -> Result<SystemConfig, ConfigError> {
        Ok(SystemConfig::Galera(MariaDbConfig {
            topology: Topology::Galera,
            base_dir: self.mariadb_dir,
            write_to: self.write_to,
            flush_log_at_trx_commit: self.innodb_flush_log_at_trx_commit.value(),
            sync_binlog: self.sync_binlog,
            wsrep_sync_wait: self.wsrep_sync_wait,
            snapshot_isolation: self.innodb_snapshot_isolation,
            isolation: self.isolation.map(Into::into),
            ..MariaDbConfig::default()
        }))
    }
}

impl MariaDbConfig {
    /// These settings in `topology`.
    fn with_topology(&self, topology: Topology) -> MariaDbConfig {
        MariaDbConfig {
            topology,
            ..self.clone()
        }
    }

    /// Flags after `--db NAME` that rerun these settings (only non-default ones).
    fn flags(&self) -> Vec<String> {
        let d = MariaDbConfig::default();
        let mut parts = Vec::new();
        if self.base_dir != d.base_dir {
            parts.push(format!(
                "--mariadb-dir {}",
                crate::control::quote(&self.base_dir)
            ));
        }
        if let Some(i) = self.isolation {
            parts.push(format!("--isolation {i}"));
        }
        if self.write_to != d.write_to {
            parts.push(format!("--write-to {}", self.write_to.as_str()));
        }
        if self.flush_log_at_trx_commit != d.flush_log_at_trx_commit {
            parts.push(format!(
                "--innodb-flush-log-at-trx-commit {}",
                self.flush_log_at_trx_commit
            ));
        }
        if let Some(n) = self.sync_binlog {
            parts.push(format!("--sync-binlog {n}"));
        }
        if self.wsrep_sync_wait != d.wsrep_sync_wait {
            parts.push(format!("--wsrep-sync-wait {}", self.wsrep_sync_wait));
        }
        if self.snapshot_isolation {
            parts.push("--innodb-snapshot-isolation".into());
        }
        parts
    }
}

impl SystemSettings for MariaDbConfig {
    fn name(&self) -> &'static str {
        GALERA
    }

    fn open(&self) -> Arc<dyn System> {
        Arc::new(MariaDb::new(self.with_topology(Topology::Galera)))
    }

    fn rerun_args(&self) -> Vec<String> {
        self.flags()
    }
}

impl SystemSettings for ReplicatedConfig {
    fn name(&self) -> &'static str {
        MARIADB
    }

    fn open(&self) -> Arc<dyn System> {
        Arc::new(MariaDb::new(self.0.with_topology(Topology::Replicated)))
    }

    fn rerun_args(&self) -> Vec<String> {
        self.0.flags()
    }
}

/// The model MariaDB's documentation names for a level, and in words why.
fn claim(cfg: &MariaDbConfig) -> (crate::checker::txn::consistency::Model, String) {
    use crate::checker::txn::consistency::Model;
    let level = cfg.isolation.unwrap_or_default();
    let given = if cfg.isolation.is_some() {
        String::new()
    } else {
        ", the default".into()
    };
    let flag = format!("--isolation {}{given}", level.name());
    match level {
        txn::Isolation::ReadCommitted => (
            Model::ReadCommitted,
            format!("MariaDB's read committed level ({flag})"),
        ),
        // With innodb_snapshot_isolation a write to a row changed after the read view was
        // taken fails: first-committer-wins, what snapshot isolation needs.
        txn::Isolation::RepeatableRead if cfg.snapshot_isolation => (
            Model::SnapshotIsolation,
            format!("MariaDB's repeatable read with innodb_snapshot_isolation=ON ({flag})"),
        ),
        // Galera's documentation places its cluster-wide isolation "between serializable and
        // repeatable read"; repeatable read (Adya's PL-2.99) proscribes lost updates.
        txn::Isolation::RepeatableRead if cfg.topology == Topology::Galera => (
            Model::RepeatableRead,
            format!(
                "MariaDB's repeatable read, which Galera's documentation places between serializable and repeatable read cluster-wide ({flag})"
            ),
        ),
        // The SQL standard's level by its name; every transaction runs on the primary.
        txn::Isolation::RepeatableRead => (
            Model::RepeatableRead,
            format!("MariaDB's repeatable read on the primary ({flag})"),
        ),
        txn::Isolation::Serializable => (
            Model::Serializable,
            format!("MariaDB's serializable level ({flag})"),
        ),
    }
}

impl MariaDb {
    /// What this topology serves.
    fn supports(&self) -> &'static Supports {
        match self.cfg.topology {
            Topology::Galera => &GALERA_SUPPORTS,
            Topology::Replicated => &MARIADB_SUPPORTS,
        }
    }
}

impl System for MariaDb {
    /// Besides [`Supports::check`]: `--isolation` only for transactions, and transactions
    /// only with reads where their writes go (a transaction runs on one node).
    fn validate(&self, workload: &WorkloadSpec, options: &RunOptions) -> Result<(), ConfigError> {
        let name = self.cfg.topology.db_name();
        let txn = workload.kind == crate::generator::txn::KIND;
        if self.cfg.isolation.is_some() && !txn {
            return Err(ConfigError::new(
                "--isolation",
                format!(
                    "applies to transactions (--workload txn) on {name}; the {} workload runs single statements",
                    workload.kind
                ),
            ));
        }
        let txn_reads_ok = match self.cfg.topology {
            Topology::Galera => options.read_from == ReadFrom::Own,
            Topology::Replicated => matches!(options.read_from, ReadFrom::Own | ReadFrom::Primary),
        };
        if txn && !txn_reads_ok {
            let where_to = match self.cfg.topology {
                Topology::Galera => "where --write-to sends it",
                Topology::Replicated => "on the primary",
            };
            return Err(ConfigError::new(
                "--read-from",
                format!(
                    "{}: on {name} a transaction runs {where_to}, its reads included (drop --read-from)",
                    options.read_from.as_str()
                ),
            ));
        }
        self.supports().check(self, workload, options)
    }

    fn claimed_consistency(
        &self,
        workload: &WorkloadSpec,
    ) -> Option<(Vec<crate::checker::txn::consistency::Model>, String)> {
        if workload.kind != crate::generator::txn::KIND {
            return None;
        }
        let (model, why) = claim(&self.cfg);
        Some((vec![model], why))
    }

    fn await_ready(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        match self.cfg.topology {
            Topology::Galera => MariaDb::await_ready(self, remote, node, cluster.len()),
            Topology::Replicated => self.await_replicated(remote, node, cluster),
        }
    }

    fn client(&self, ctx: &ClientCtx) -> Result<Box<dyn Client>, ClientOpenError> {
        let cfg = conn::MyClientConfig {
            nodes: ctx
                .nodes
                .iter()
                .map(|n| conn::MyNode {
                    name: n.name.clone(),
                    host: n.host.clone(),
                })
                .collect(),
            port: self.cfg.port,
            own: ctx.node,
            write_to: match self.cfg.topology {
                Topology::Galera => self.cfg.write_to,
                Topology::Replicated => WriteTo::Primary,
            },
            read_from: ctx.read_from,
            read_nodes: ctx.read_node_indices()?,
            isolation: self.cfg.isolation.unwrap_or_default(),
            timeout_ms: ctx.op_timeout_ms,
            seed: ctx.seed.wrapping_add(2000 + ctx.thread as u64),
        };
        let name = self.cfg.topology.db_name();
        let made =
            |e: ClientOpenError| e.context(format_args!("creating {name} client {}", ctx.thread));
        if ctx.workload_kind == crate::generator::txn::KIND {
            return Ok(Box::new(txn::MyTxnClient::new(cfg).map_err(made)?));
        }
        let client = kv::MyKvClient::new(cfg).map_err(made)?;
        if ctx.workload_kind == crate::generator::set::KIND {
            return Ok(Box::new(client.with_set_ops()));
        }
        Ok(Box::new(client))
    }

    fn config_json(&self, cluster: &[Node]) -> Value {
        let mut v = json!(self.cfg);
        v["effective_isolation"] = json!(self.cfg.isolation.unwrap_or_default());
        if self.cfg.topology == Topology::Replicated {
            v["primary_node"] = json!(cluster.first().map(|n| n.name.clone()));
        }
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
    use crate::checker::txn::consistency::Model;

    #[test]
    fn each_level_claims_what_mariadb_documents() {
        let mut cfg = MariaDbConfig::default();
        let (m, why) = claim(&cfg);
        assert_eq!(m, Model::RepeatableRead);
        assert!(why.contains("the default"), "{why}");
        cfg.snapshot_isolation = true;
        assert_eq!(claim(&cfg).0, Model::SnapshotIsolation);
        cfg.isolation = Some(txn::Isolation::Serializable);
        assert_eq!(claim(&cfg).0, Model::Serializable);
        cfg.isolation = Some(txn::Isolation::ReadCommitted);
        assert_eq!(claim(&cfg).0, Model::ReadCommitted);
    }

    #[test]
    fn rerun_args_name_only_what_differs_from_the_defaults() {
        let cfg = MariaDbConfig::default();
        assert!(cfg.rerun_args().is_empty());
        let cfg = MariaDbConfig {
            isolation: Some(txn::Isolation::Serializable),
            write_to: WriteTo::Primary,
            flush_log_at_trx_commit: 2,
            wsrep_sync_wait: 1,
            ..Default::default()
        };
        assert_eq!(
            cfg.rerun_args(),
            [
                "--isolation serializable",
                "--write-to primary",
                "--innodb-flush-log-at-trx-commit 2",
                "--wsrep-sync-wait 1"
            ]
        );
    }
}
