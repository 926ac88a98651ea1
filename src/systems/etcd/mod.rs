//! etcd as a system under test: its flags (`--etcd-dir`, `--etcd-tarball`), its settings
//! (`EtcdConfig`), what it can serve (`validate`) and its per-thread clients.
//!
//! Owns the `System` impl of etcd. The lifecycle on the nodes (install, start, kill, pause,
//! leaders) is `db`; member views, removal and fresh joins are `membership`; the v3 JSON-gateway client is `client`, and its client-only load loop (for
//! `shakedown bench`) is `bare_loop`.

pub mod bare_loop;
pub mod client;
pub mod db;
pub mod lock;
pub mod membership;
pub mod wire;

pub use db::{Etcd, EtcdConfig};

use super::{RunOptions, Supports, System, SystemArgs, SystemConfig, SystemSettings};
use crate::client::{Client, ClientCtx, ClientOpenError};
use crate::control::Remote;
use crate::db::{Db, DbError};
use crate::node::Node;
use crate::options::{ConfigError, ReadFrom, ReadMode};
use crate::spec::WorkloadSpec;
use client::{EtcdClient, EtcdClientConfig};
use serde_json::{Value, json};
use std::sync::Arc;

/// The `--db` name.
pub const NAME: &str = "etcd";

/// What etcd serves: every workload, both read modes, reads to the own or a random member.
pub const SUPPORTS: Supports = Supports {
    workloads: &[
        "register",
        "list-append",
        crate::generator::set::KIND,
        crate::generator::lock::KIND,
        crate::generator::lock::FENCED_KIND,
    ],
    read_modes: &[ReadMode::Linearizable, ReadMode::Serializable],
    read_from: &[ReadFrom::Own, ReadFrom::Any],
    read_nodes: true,
};

/// etcd's flags.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "etcd (--db etcd)")]
pub struct EtcdArgs {
    /// Directory on each node for etcd data, logs and pidfile.
    #[arg(long, default_value = "/tmp/shakedown/etcd")]
    pub etcd_dir: String,
    /// etcd release tarball URL to install on nodes without etcd (default: apt-get).
    #[arg(long)]
    pub etcd_tarball: Option<String>,
}

impl SystemArgs for EtcdArgs {
    const NAME: &'static str = NAME;
    const LABEL: &'static str = "etcd";

    fn into_config(self) -> Result<SystemConfig, ConfigError> {
        Ok(SystemConfig::Etcd(EtcdConfig {
            base_dir: self.etcd_dir,
            tarball_url: self.etcd_tarball,
            ..EtcdConfig::default()
        }))
    }
}

impl SystemSettings for EtcdConfig {
    fn name(&self) -> &'static str {
        NAME
    }

    fn open(&self) -> Arc<dyn System> {
        Arc::new(Etcd::new(self.clone()))
    }
}

impl System for Etcd {
    fn validate(&self, workload: &WorkloadSpec, options: &RunOptions) -> Result<(), ConfigError> {
        SUPPORTS.check(self, workload, options)
    }

    fn await_ready(
        &self,
        remote: &dyn Remote,
        node: &Node,
        _cluster: &[Node],
    ) -> Result<(), DbError> {
        Etcd::await_ready(self, remote, node)
    }

    fn client(&self, ctx: &ClientCtx) -> Result<Box<dyn Client>, ClientOpenError> {
        let node = ctx.own();
        // Nothing is sent when a client is made: an error is its settings' (an endpoint that is
        // no URL, a zero timeout; `EtcdError::Invalid`), or the HTTP library's (`Library`).
        let failed = |e: client::EtcdError| {
            let words = format!("{}: creating etcd client: {e}", node.name);
            match e {
                client::EtcdError::Invalid { .. } => ClientOpenError::Config(words),
                _ => ClientOpenError::Driver(words),
            }
        };
        let client = EtcdClient::new(EtcdClientConfig {
            endpoint: self.endpoint(node),
            read_mode: ctx.read_mode,
            timeout_ms: ctx.op_timeout_ms,
            key_prefix: format!("/shakedown/{}/", ctx.seed),
        })
        .map_err(failed)?;
        if crate::generator::lock::is_lock_kind(&ctx.workload_kind) {
            return Ok(Box::new(lock::EtcdLockClient::new(client)));
        }
        let client = if ctx.workload_kind == crate::generator::set::KIND {
            client.with_set_reads()
        } else {
            client
        };
        let client = match ctx.read_from {
            // Each thread's member choices come from its own seeded stream.
            ReadFrom::Any => {
                let named = ctx.read_node_indices()?;
                let members: Vec<String> = if named.is_empty() {
                    ctx.nodes.iter().map(|n| self.endpoint(n)).collect()
                } else {
                    named
                        .iter()
                        .map(|&i| self.endpoint(&ctx.nodes[i]))
                        .collect()
                };
                client
                    .with_read_endpoints(
                        members,
                        ctx.seed ^ (ctx.thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    )
                    .map_err(failed)?
            }
            // `validate` admits only own and any.
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

    fn clock_programs(&self) -> &'static [&'static str] {
        &["etcd"]
    }
}
