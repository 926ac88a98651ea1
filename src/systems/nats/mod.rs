//! NATS JetStream as a system under test: its flags (`--nats-replicas`, `--nats-streams`,
//! `--nats-dir`), its settings (`NatsConfig`), what it can serve (`validate`: the `log` workload
//! only) and its per-thread clients.
//!
//! Owns the `System` impl of NATS. The lifecycle on the nodes (install, start, kill, pause,
//! readiness and stream creation) is `db`; the `async-nats` client is `client`.

pub mod client;
pub mod db;

pub use db::{Nats, NatsConfig};

use super::{RunOptions, Supports, System, SystemArgs, SystemConfig, SystemSettings};
use crate::client::{Client, ClientCtx};
use crate::config::{ConfigError, ReadFrom, ReadMode};
use crate::control::Remote;
use crate::db::{Db, DbError};
use crate::node::Node;
use crate::spec::WorkloadSpec;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The `--db` name.
pub const NAME: &str = "nats";

/// JetStream's largest replication factor.
const MAX_REPLICAS: usize = 5;

/// What NATS serves: the log workload, reads from the thread's own node.
pub const SUPPORTS: Supports = Supports {
    workloads: &[crate::generator::log::KIND],
    read_modes: &[ReadMode::Linearizable],
    read_from: &[ReadFrom::Own],
    read_nodes: false,
};

/// NATS's flags.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "NATS JetStream (--db nats)")]
pub struct NatsArgs {
    /// Directory on each node for NATS data, log and pidfile.
    #[arg(long, default_value = "/tmp/shakedown/nats")]
    pub nats_dir: String,
    /// Replicas of each stream (1-5, at most the node count).
    #[arg(long, default_value_t = 3)]
    pub nats_replicas: usize,
    /// Streams created (LOG0, LOG1, …), one per log of the workload.
    #[arg(long, default_value_t = 3)]
    pub nats_streams: usize,
}

impl SystemArgs for NatsArgs {
    const NAME: &'static str = NAME;
    const LABEL: &'static str = "NATS";

    fn into_config(self) -> Result<SystemConfig, ConfigError> {
        if self.nats_replicas == 0 || self.nats_replicas > MAX_REPLICAS {
            return Err(ConfigError::new(
                "--nats-replicas",
                format!(
                    "{}: JetStream streams have 1 to {MAX_REPLICAS} replicas",
                    self.nats_replicas
                ),
            ));
        }
        if self.nats_streams == 0 {
            return Err(ConfigError::new("--nats-streams", "must be at least 1"));
        }
        Ok(SystemConfig::Nats(NatsConfig {
            base_dir: self.nats_dir,
            replicas: self.nats_replicas,
            streams: self.nats_streams,
            ..NatsConfig::default()
        }))
    }
}

impl SystemSettings for NatsConfig {
    fn name(&self) -> &'static str {
        NAME
    }

    fn open(&self) -> Arc<dyn System> {
        Arc::new(Nats::new(self.clone()))
    }

    fn rerun_args(&self) -> Vec<String> {
        vec![
            "--nats-replicas".into(),
            self.replicas.to_string(),
            "--nats-streams".into(),
            self.streams.to_string(),
        ]
    }
}

impl System for Nats {
    fn validate(&self, workload: &WorkloadSpec, options: &RunOptions) -> Result<(), ConfigError> {
        SUPPORTS.check(self, workload, options)?;
        if self.cfg.replicas > options.node_count {
            return Err(ConfigError::new(
                "--nats-replicas",
                format!(
                    "{} replicas need at least as many nodes; the cluster has {}",
                    self.cfg.replicas, options.node_count
                ),
            ));
        }
        let keys = workload.log.clone().unwrap_or_default().keys;
        if keys > self.cfg.streams {
            return Err(ConfigError::new(
                "--nats-streams",
                format!(
                    "{}: the workload writes {keys} logs, each a stream; give --nats-streams {keys}",
                    self.cfg.streams
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
        Nats::await_ready(self, remote, node, cluster)
    }

    fn client(&self, ctx: &ClientCtx) -> Result<Box<dyn Client>, String> {
        let node = ctx.own();
        Ok(Box::new(client::NatsClient::new(
            &node.name,
            self.url(node),
            Duration::from_millis(ctx.op_timeout_ms),
        )))
    }

    fn config_json(&self, _cluster: &[Node]) -> Value {
        let mut v = json!(self.cfg);
        v["sync"] = json!(
            "nats-server 2.9 (Debian 12) fsyncs stream files on a fixed timer and offers no setting for it"
        );
        v
    }

    fn to_arc(&self) -> Arc<dyn System> {
        Arc::new(self.clone())
    }

    fn to_db(&self) -> Arc<dyn Db> {
        Arc::new(self.clone())
    }
}
