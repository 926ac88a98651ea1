//! PostgreSQL as a system under test: its flags (`--pg-dir`, `--synchronous-commit`,
//! `--synchronous-standby-names`, `--pg-fsync`, `--isolation` for the txn workload), its settings (`PostgresConfig`), what it can serve
//! (`validate`) and its per-thread clients.
//!
//! Owns the `System` impl of PostgreSQL. The primary/replica lifecycle on the nodes is `db`; the
//! tokio-postgres register client is `client`; the transaction client (`--workload txn`) `txn`.

pub mod client;
pub mod db;
pub mod txn;

pub use db::{Postgres, PostgresConfig, SynchronousCommit};

use super::{RunOptions, Supports, System, SystemArgs, SystemConfig, SystemSettings};
use crate::client::{Client, ClientCtx, ClientOpenError};
use crate::control::Remote;
use crate::db::{Db, DbError};
use crate::node::Node;
use crate::options::{ConfigError, ReadFrom, ReadMode};
use crate::spec::WorkloadSpec;
use client::{PgClient, PgClientConfig, PgNode};
use serde_json::{Value, json};
use std::sync::Arc;

/// The `--db` name.
pub const NAME: &str = "postgres";

/// What PostgreSQL serves: the register and set workloads (its client has no list append),
/// linearizable reads only (stale reads are asked for with `--read-from replica`), reads anywhere.
pub const SUPPORTS: Supports = Supports {
    workloads: &[
        "register",
        crate::generator::set::KIND,
        crate::generator::txn::KIND,
        crate::generator::lock::LWW_KIND,
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

/// `synchronous_commit` for PostgreSQL.
#[derive(Debug, Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
#[value(rename_all = "snake_case")]
pub enum SyncCommitArg {
    /// Acknowledge before the local WAL flush.
    Off,
    /// Wait for the local flush only.
    Local,
    /// Local flush, plus synchronous standbys' flush when there are any.
    On,
    /// Wait until synchronous standbys wrote the WAL.
    RemoteWrite,
    /// Wait until synchronous standbys applied the commit.
    RemoteApply,
}

impl From<SyncCommitArg> for SynchronousCommit {
    fn from(s: SyncCommitArg) -> Self {
        match s {
            SyncCommitArg::Off => SynchronousCommit::Off,
            SyncCommitArg::Local => SynchronousCommit::Local,
            SyncCommitArg::On => SynchronousCommit::On,
            SyncCommitArg::RemoteWrite => SynchronousCommit::RemoteWrite,
            SyncCommitArg::RemoteApply => SynchronousCommit::RemoteApply,
        }
    }
}

/// PostgreSQL's flags.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "PostgreSQL (--db postgres)")]
pub struct PostgresArgs {
    /// Directory on each node for PostgreSQL data, log, pidfile and socket.
    #[arg(long, default_value = "/tmp/shakedown/postgres")]
    pub pg_dir: String,
    /// PostgreSQL `synchronous_commit`.
    #[arg(long, value_enum, default_value_t = SyncCommitArg::On)]
    pub synchronous_commit: SyncCommitArg,
    /// PostgreSQL `synchronous_standby_names` (default: `FIRST 1 (<second node>)` when
    /// --synchronous-commit is remote_write or remote_apply, else none).
    #[arg(long)]
    pub synchronous_standby_names: Option<String>,
    /// Isolation level of each transaction of `--workload txn` (default serializable).
    #[arg(long, value_enum)]
    pub isolation: Option<IsolationArg>,
    /// PostgreSQL `fsync`: off = the server never makes its WAL or data files durable, so a
    /// power loss (`--nemesis power-loss`) can take acknowledged commits with it.
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub pg_fsync: OnOff,
}

/// `on` / `off` for a boolean server setting.
#[derive(Debug, Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum OnOff {
    /// On.
    On,
    /// Off.
    Off,
}

/// `--isolation`.
#[derive(Debug, Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum IsolationArg {
    /// READ COMMITTED.
    ReadCommitted,
    /// REPEATABLE READ (snapshot isolation in PostgreSQL).
    RepeatableRead,
    /// SERIALIZABLE.
    Serializable,
}

impl From<IsolationArg> for txn::Isolation {
    fn from(a: IsolationArg) -> Self {
        match a {
            IsolationArg::ReadCommitted => txn::Isolation::ReadCommitted,
            IsolationArg::RepeatableRead => txn::Isolation::RepeatableRead,
            IsolationArg::Serializable => txn::Isolation::Serializable,
        }
    }
}

impl SystemArgs for PostgresArgs {
    const NAME: &'static str = NAME;
    const LABEL: &'static str = "PostgreSQL";

    fn into_config(self) -> Result<SystemConfig, ConfigError> {
        Ok(SystemConfig::Postgres(PostgresConfig {
            base_dir: self.pg_dir,
            synchronous_commit: self.synchronous_commit.into(),
            synchronous_standby_names: self.synchronous_standby_names,
            isolation: self.isolation.map(Into::into),
            fsync: self.pg_fsync == OnOff::On,
            ..PostgresConfig::default()
        }))
    }
}

impl SystemSettings for PostgresConfig {
    fn name(&self) -> &'static str {
        NAME
    }

    fn open(&self) -> Arc<dyn System> {
        Arc::new(Postgres::new(self.clone()))
    }

    fn rerun_args(&self) -> Vec<String> {
        let mut parts = vec![format!("--synchronous-commit {}", self.synchronous_commit)];
        if let Some(i) = self.isolation {
            parts.push(format!("--isolation {i}"));
        }
        if let Some(names) = &self.synchronous_standby_names {
            parts.push(format!(
                "--synchronous-standby-names {}",
                crate::control::quote(names)
            ));
        }
        if !self.fsync {
            parts.push("--pg-fsync off".into());
        }
        parts
    }
}

impl System for Postgres {
    fn validate(&self, workload: &WorkloadSpec, options: &RunOptions) -> Result<(), ConfigError> {
        if self.cfg.isolation.is_some() && workload.kind != crate::generator::txn::KIND {
            return Err(ConfigError::new(
                "--isolation",
                format!(
                    "applies to transactions (--workload txn); the {} workload runs single statements",
                    workload.kind
                ),
            ));
        }
        SUPPORTS.check(self, workload, options)
    }

    fn claimed_consistency(
        &self,
        workload: &WorkloadSpec,
    ) -> Option<(Vec<crate::checker::txn::consistency::Model>, String)> {
        use crate::checker::txn::consistency::Model;
        if workload.kind != crate::generator::txn::KIND {
            return None;
        }
        // What PostgreSQL documents for each level ("Transaction Isolation"): repeatable read
        // is implemented as snapshot isolation, serializable as serializable snapshot isolation.
        let level = self.cfg.isolation.unwrap_or_default();
        let model = match level {
            txn::Isolation::ReadCommitted => Model::ReadCommitted,
            txn::Isolation::RepeatableRead => Model::SnapshotIsolation,
            txn::Isolation::Serializable => Model::Serializable,
        };
        let given = if self.cfg.isolation.is_some() {
            ""
        } else {
            ", the default"
        };
        Some((
            vec![model],
            format!(
                "PostgreSQL's {} level (--isolation {}{given})",
                level.name().replace('-', " "),
                level.name()
            ),
        ))
    }

    fn await_ready(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        Postgres::await_ready(self, remote, node, cluster)
    }

    fn client(&self, ctx: &ClientCtx) -> Result<Box<dyn Client>, ClientOpenError> {
        let nodes = &ctx.nodes;
        let primary = self
            .primary(nodes)
            .and_then(|p| nodes.iter().position(|n| n.name == p.name))
            .ok_or_else(|| {
                ClientOpenError::Config("postgres: the primary is not among the nodes".to_string())
            })?;
        let cfg = PgClientConfig {
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
            own: ctx.node,
            read_from: ctx.read_from,
            read_nodes: ctx.read_node_indices()?,
            timeout_ms: ctx.op_timeout_ms,
            seed: ctx.seed.wrapping_add(1000 + ctx.thread as u64),
        };
        let client = PgClient::new(cfg.clone())
            .map_err(|e| e.context(format_args!("creating postgres client {}", ctx.thread)))?;
        if ctx.workload_kind == crate::generator::txn::KIND {
            return Ok(Box::new(txn::PgTxnClient::new(
                cfg,
                self.cfg.isolation.unwrap_or_default(),
            )?));
        }
        if ctx.workload_kind == crate::generator::set::KIND {
            return Ok(Box::new(client.with_set_reads()));
        }
        if ctx.workload_kind == crate::generator::lock::LWW_KIND {
            return Ok(Box::new(client.with_lww()));
        }
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
    fn postgres_system_builds_clients_and_records_settings() {
        let cfg = SystemConfig::Postgres(PostgresConfig {
            synchronous_commit: SynchronousCommit::RemoteApply,
            ..Default::default()
        });
        let sys = cfg.open();
        assert_eq!(sys.name(), "postgres");
        assert!(sys.client(&ctx(4, &["n3", "n1"])).is_ok());
        let v = sys.config_json(&nodes());
        assert_eq!(v["effective_synchronous_standby_names"], "FIRST 1 (n2)");
        assert_eq!(v["primary_node"], "n1");
        assert_eq!(v["synchronous_commit"], "remote_apply");
        let e = sys.client(&ctx(0, &["n7"])).err().unwrap();
        assert!(e.is_config(), "{e:?}");
        let e = e.to_string();
        assert!(e.contains("--read-nodes") && e.contains("n7"), "{e}");
        assert_eq!(
            cfg.rerun_args(),
            vec!["--synchronous-commit remote_apply".to_string()]
        );
    }

    #[test]
    fn pg_fsync_off_reaches_the_server_and_the_rerun_line_and_power_loss_gets_a_layer() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            pg: PostgresArgs,
        }
        let off = Cli::parse_from(["x", "--pg-fsync", "off"])
            .pg
            .into_config()
            .unwrap();
        let on = Cli::parse_from(["x"]).pg.into_config().unwrap();
        assert!(off.rerun_args().contains(&"--pg-fsync off".to_string()));
        assert!(!on.rerun_args().iter().any(|a| a.contains("fsync")));
        let SystemConfig::Postgres(cfg) = &off else {
            panic!("{off:?}")
        };
        let cmd = Postgres::new(cfg.clone()).command(&nodes()[0], &nodes());
        assert!(cmd.contains(&"fsync=off".to_string()), "{cmd:?}");
        let SystemConfig::Postgres(cfg) = &on else {
            panic!("{on:?}")
        };
        let cmd = Postgres::new(cfg.clone()).command(&nodes()[0], &nodes());
        assert!(cmd.contains(&"fsync=on".to_string()), "{cmd:?}");

        let mut with_layer = on.clone();
        assert!(with_layer.open().to_db().data_layer().is_none());
        with_layer.serve_data_from_layer("/opt/shakedown");
        let db = with_layer.open().to_db();
        let layer = db.data_layer().unwrap();
        assert_eq!(layer.exe, "/opt/shakedown");
        assert_eq!(layer.data_dir, "/tmp/shakedown/postgres/data");
        assert_eq!(
            db.data_dir().as_deref(),
            Some("/tmp/shakedown/postgres/data")
        );
        assert!(db.data_files().contains(&"pg_wal/0*".to_string()));
    }
}
