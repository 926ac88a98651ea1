//! etcd as a system under test: install, configure a cluster of all nodes, start as a daemon with
//! a pidfile, wait until healthy, kill -9 / restart, pause / resume, wipe, logs.
//!
//! A server starts from one command line (`Etcd::command`) whatever brings it up: the first
//! start of the whole cluster (`--initial-cluster-state new`, every node) or a fresh member
//! joining a running one (`existing`, the members and itself; `membership`, which owns etcd's
//! membership ability, asks for that through `Bootstrap`).
//!
//! Runs the same commands on the sandbox and on real hosts. Layout on a node (all under
//! `base_dir`, default `/tmp/shakedown/etcd`, which is private per sandbox node):
//! `data/` (member data, wiped by `setup`), `etcd.log`, `etcd.pid`, and `bin/` when installed from a
//! release tarball. Binaries come from `bin/` if present, else from `PATH` (Debian's
//! `etcd-server`/`etcd-client`, installed with apt-get when missing and no tarball URL is given).
//! Does not own the client protocol (that is `client`).

use crate::control::{Cmd, Remote};
use crate::db::Abilities;
use crate::db::{Binary, Db, DbError, Kill, Pause, Primaries};
use crate::node::Node;
use crate::systems::lifecycle::{Layout, Lifecycle};
use crate::systems::ready;
use std::collections::BTreeSet;
use std::sync::Arc;

/// How to run etcd on the nodes. Fields missing from a recorded config (an older test.json)
/// take their defaults.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct EtcdConfig {
    /// Directory on each node holding data, log, pidfile and (optionally) binaries.
    pub base_dir: String,
    /// Release tarball URL (e.g. etcd-v3.5.x-linux-amd64.tar.gz) used when etcd is not installed;
    /// `None` installs Debian's packages with apt-get.
    pub tarball_url: Option<String>,
    /// Client port (the workload's gateway).
    pub client_port: u16,
    /// Peer port.
    pub peer_port: u16,
    /// How long to wait for the cluster to become healthy.
    pub ready_timeout_ms: u64,
    /// The `shakedown` binary serving `data/` from the lose-unsynced layer (runs with the
    /// `power-loss` fault); `None`: a plain directory.
    pub lazyfs: Option<String>,
}

impl Default for EtcdConfig {
    fn default() -> Self {
        EtcdConfig {
            base_dir: "/tmp/shakedown/etcd".into(),
            tarball_url: None,
            client_port: 2379,
            peer_port: 2380,
            ready_timeout_ms: 30_000,
            lazyfs: None,
        }
    }
}

/// The etcd system.
#[derive(Debug, Clone, Default)]
pub struct Etcd {
    /// Settings.
    pub cfg: EtcdConfig,
}

/// Start etcd unless the pidfile names a live etcd. `$1` = base dir, the rest = the command.
const START_SCRIPT: &str = concat!(
    crate::systems::strays::live_sh!(),
    r#"set -e
dir="$1"; shift
mkdir -p "$dir"
pid=$(cat "$dir/etcd.pid" 2>/dev/null || true)
if live "$pid" etcd; then exit 0; fi
cd "$dir"
setsid "$@" >> "$dir/etcd.log" 2>&1 < /dev/null &
echo $! > "$dir/etcd.pid"
"#
);

/// The file name of our servers' executable, for [`crate::systems::strays::sweep`].
const EXE_PATTERN: &str = "^etcd( |$)";

/// How a server with an empty data directory finds its cluster: the only differences between
/// the first start of a cluster and a fresh member joining a running one.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bootstrap<'a> {
    /// `--initial-cluster`: every member at the start, each `name=peer URL`.
    pub initial_cluster: &'a [Node],
    /// `--initial-cluster-state`.
    pub state: ClusterState,
}

impl<'a> Bootstrap<'a> {
    /// The first start of a cluster of `nodes`.
    pub fn new_cluster(nodes: &'a [Node]) -> Bootstrap<'a> {
        Bootstrap {
            initial_cluster: nodes,
            state: ClusterState::New,
        }
    }

    /// A fresh member joining a running cluster: `members_and_self` names the members the
    /// cluster has (the joining one included, as `member add` recorded it).
    pub fn join(members_and_self: &'a [Node]) -> Bootstrap<'a> {
        Bootstrap {
            initial_cluster: members_and_self,
            state: ClusterState::Existing,
        }
    }
}

/// etcd's `--initial-cluster-state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ClusterState {
    /// Every member starts together and forms the cluster.
    New,
    /// The member joins a cluster that runs and has it added already.
    Existing,
}

impl ClusterState {
    fn flag(self) -> &'static str {
        match self {
            ClusterState::New => "new",
            ClusterState::Existing => "existing",
        }
    }
}

/// etcdctl that fails fast when etcd died (the health probe, membership views): `$1` = etcdctl
/// path, `$2` = base dir, the rest = etcdctl arguments. When the pidfile names no live etcd,
/// prints the last log lines (cut to 300 characters) and exits [`ready::NOT_RUNNING`].
const READY_SCRIPT: &str = concat!(
    crate::systems::strays::live_sh!(),
    crate::systems::strays::log_tail_sh!(),
    r#"c="$1"; dir="$2"; shift 2
pid=$(cat "$dir/etcd.pid" 2>/dev/null || true)
if ! live "$pid" etcd; then
  log_tail "$dir/etcd.log" 3
  exit 3
fi
[ -x "$c" ] || c=etcdctl
ETCDCTL_API=3 exec "$c" "$@"
"#
);

/// Run etcdctl (the tarball's if present, else PATH's): `$1` = etcdctl path, the rest = its args.
const ETCDCTL_SCRIPT: &str = r#"c="$1"; shift
[ -x "$c" ] || c=etcdctl
ETCDCTL_API=3 exec "$c" "$@"
"#;

/// Install etcd from a release tarball if it is not there yet: `$1` = base dir, `$2` = URL.
const TARBALL_SCRIPT: &str = r#"set -e
dir="$1"; url="$2"
[ -x "$dir/bin/etcd" ] && exit 0
mkdir -p "$dir/bin" "$dir/dl"
if command -v curl >/dev/null 2>&1; then curl -fsSL -o "$dir/dl/etcd.tar.gz" "$url";
else wget -q -O "$dir/dl/etcd.tar.gz" "$url"; fi
tar -xzf "$dir/dl/etcd.tar.gz" -C "$dir/bin" --strip-components=1
"#;

/// Debian's etcd (server and etcdctl).
const PACKAGES: [&str; 2] = ["etcd-server", "etcd-client"];

impl Etcd {
    /// An etcd system with the given settings.
    pub fn new(cfg: EtcdConfig) -> Etcd {
        Etcd { cfg }
    }

    pub(super) fn bin(&self, name: &str) -> String {
        // Resolved on the node: prefer the tarball install.
        format!("{}/bin/{name}", self.cfg.base_dir)
    }

    pub(super) fn client_url(&self, node: &Node) -> String {
        format!("http://{}:{}", node.host, self.cfg.client_port)
    }

    pub(super) fn peer_url(&self, node: &Node) -> String {
        format!("http://{}:{}", node.host, self.cfg.peer_port)
    }

    /// The client endpoint of a node (for the workload client).
    pub fn endpoint(&self, node: &Node) -> String {
        self.client_url(node)
    }

    /// The full etcd command line for a node. The bootstrap flags only matter while the data
    /// directory is empty: etcd reads its membership from its WAL after its first start.
    fn command(&self, node: &Node, boot: &Bootstrap<'_>) -> Vec<String> {
        let initial: Vec<String> = boot
            .initial_cluster
            .iter()
            .map(|n| format!("{}={}", n.name, self.peer_url(n)))
            .collect();
        vec![
            "sh".into(),
            "-c".into(),
            // Pick the tarball binary if present, else PATH; exec so the pidfile names etcd.
            r#"b="$0"; [ -x "$b" ] || b=etcd; exec "$b" "$@""#.into(),
            self.bin("etcd"),
            "--name".into(),
            node.name.clone(),
            "--data-dir".into(),
            self.data_path(),
            "--listen-client-urls".into(),
            self.client_url(node),
            "--advertise-client-urls".into(),
            self.client_url(node),
            "--listen-peer-urls".into(),
            self.peer_url(node),
            "--initial-advertise-peer-urls".into(),
            self.peer_url(node),
            "--initial-cluster".into(),
            initial.join(","),
            "--initial-cluster-state".into(),
            boot.state.flag().into(),
            "--initial-cluster-token".into(),
            "shakedown".into(),
            "--logger".into(),
            "zap".into(),
        ]
    }

    /// Start etcd on `node` unless it runs (see [`START_SCRIPT`]).
    fn start_process(
        &self,
        remote: &dyn Remote,
        node: &Node,
        boot: &Bootstrap<'_>,
    ) -> Result<(), DbError> {
        let mut args = vec![self.cfg.base_dir.clone()];
        args.extend(self.command(node, boot));
        remote.exec_ok(&Cmd::script(START_SCRIPT, args))?;
        Ok(())
    }

    /// Start etcd on `node` with an empty data directory (a fresh layer over it when the run
    /// serves data from one), bootstrapping as `boot` says. The caller wiped the data first.
    pub(super) fn start_fresh(
        &self,
        remote: &dyn Remote,
        node: &Node,
        boot: &Bootstrap<'_>,
    ) -> Result<(), DbError> {
        remote.exec_ok(&Cmd::new("mkdir").args(["-p", &self.cfg.base_dir]))?;
        self.fresh_data(remote)?;
        self.start_process(remote, node, boot)
    }

    /// etcdctl with `args` on the node, but only when the node's own etcd runs (see
    /// [`READY_SCRIPT`]: exit [`ready::NOT_RUNNING`] and its log tail when it does not).
    pub(super) fn etcdctl_if_running<I, S>(&self, args: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let all = [self.bin("etcdctl"), self.cfg.base_dir.clone()]
            .into_iter()
            .chain(args.into_iter().map(Into::into));
        Cmd::script(READY_SCRIPT, all.collect::<Vec<String>>())
    }

    /// Run etcdctl (the tarball's if present, else `PATH`'s) on the node with `args`.
    pub(super) fn etcdctl<I, S>(&self, args: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let all = std::iter::once(self.bin("etcdctl")).chain(args.into_iter().map(Into::into));
        Cmd::script(ETCDCTL_SCRIPT, all.collect::<Vec<String>>())
    }

    /// Block until `node` reports healthy (has a leader and answers), or time out.
    pub fn await_ready(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError> {
        let cmd = self.etcdctl_if_running([
            "--endpoints".into(),
            self.client_url(node),
            "--command-timeout=1s".into(),
            "endpoint".into(),
            "health".into(),
        ]);
        let how = ready::Readiness {
            server: "etcd",
            what: "etcd".into(),
            timeout_ms: self.cfg.ready_timeout_ms,
            interval_ms: 200,
            exited: startup_failure,
        };
        ready::poll(remote, node, &cmd, &how)
    }
}

/// Leaders named by `etcdctl endpoint status -w json` output: every endpoint's reported leader
/// id, mapped to the node whose endpoint has that member id (endpoints matched to nodes by their
/// client URL `http://host:port`). Sorted, deduplicated; unknown ids are skipped.
pub fn leaders_from_status(json: &str, nodes: &[Node], client_port: u16) -> Vec<String> {
    let Ok(serde_json::Value::Array(statuses)) = serde_json::from_str::<serde_json::Value>(json)
    else {
        return Vec::new();
    };
    let node_of = |endpoint: &str| {
        nodes
            .iter()
            .find(|n| endpoint == format!("http://{}:{client_port}", n.host))
            .map(|n| n.name.clone())
    };
    let members: Vec<(u64, String)> = statuses
        .iter()
        .filter_map(|s| {
            let id = s["Status"]["header"]["member_id"].as_u64()?;
            Some((id, node_of(s["Endpoint"].as_str()?)?))
        })
        .collect();
    let leaders: BTreeSet<String> = statuses
        .iter()
        .filter_map(|s| s["Status"]["leader"].as_u64())
        .filter(|&id| id != 0)
        .filter_map(|id| {
            members
                .iter()
                .find(|(m, _)| *m == id)
                .map(|(_, n)| n.clone())
        })
        .collect();
    leaders.into_iter().collect()
}

/// The most telling line of etcd's (zap JSON) log tail: the last entry with an `error` field as
/// "msg: error", else the raw tail.
pub(super) fn startup_failure(log_tail: &str) -> String {
    let errors: Vec<String> = log_tail
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| {
            let err = v.get("error")?.as_str()?.to_string();
            let msg = v.get("msg").and_then(|m| m.as_str()).unwrap_or("error");
            Some(format!("{msg}: {err}"))
        })
        .collect();
    match errors.last() {
        Some(e) => e.clone(),
        None => log_tail.trim().to_string(),
    }
}

impl Abilities for Etcd {
    fn name(&self) -> &str {
        "etcd"
    }
    /// The `Date` header of its client endpoint's `/version` (whole seconds).
    fn process_clock(&self, node: &Node) -> Option<crate::db::ProcessClock> {
        Some(crate::systems::process_clock::http_date(
            &node.host,
            self.cfg.client_port,
            "/version",
            "etcd's HTTP Date header",
        ))
    }
    fn data_dir(&self) -> Option<String> {
        Some(self.data_path())
    }
    /// WAL segments, snapshots and the bbolt database.
    fn data_files(&self) -> Vec<String> {
        ["member/wal/*.wal", "member/snap/*.snap", "member/snap/db"]
            .map(String::from)
            .to_vec()
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
    fn as_primaries(&self) -> Option<&dyn Primaries> {
        Some(self)
    }
    fn as_membership(&self) -> Option<&dyn crate::db::Membership> {
        Some(self)
    }
}

impl Db for Etcd {
    fn packages(&self) -> Vec<String> {
        match self.cfg.tarball_url {
            Some(_) => Vec::new(),
            None => PACKAGES.iter().map(|p| p.to_string()).collect(),
        }
    }

    fn install(&self, remote: &dyn Remote) -> Result<(), DbError> {
        if let Some(url) = &self.cfg.tarball_url {
            remote.exec_ok(
                &Cmd::script(TARBALL_SCRIPT, [self.cfg.base_dir.clone(), url.clone()]).sudo(true),
            )?;
        }
        crate::db::check_binaries(remote, &self.required_binaries())
    }

    fn setup(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError> {
        // Kill anything left from a previous run, then wipe data and the old log.
        self.stop_and_wipe(remote)?;
        let log = format!("{}/etcd.log", self.cfg.base_dir);
        remote.exec_ok(&Cmd::new("rm").args(["-f", &log]))?;
        self.start_fresh(remote, node, &Bootstrap::new_cluster(cluster))
    }

    fn teardown(&self, remote: &dyn Remote, _node: &Node) -> Result<(), DbError> {
        self.stop(remote)
    }

    fn log_files(&self, _node: &Node) -> Vec<String> {
        vec![format!("{}/etcd.log", self.cfg.base_dir)]
    }

    fn version(&self, remote: &dyn Remote) -> Option<String> {
        let script = r#"b="$1"; [ -x "$b" ] || b=etcd; exec "$b" --version"#;
        let out = remote
            .exec_ok(&Cmd::script(script, [self.bin("etcd")]))
            .ok()?;
        out.lines().next().map(|l| l.trim().to_string())
    }

    fn required_binaries(&self) -> Vec<Binary> {
        let fix = match &self.cfg.tarball_url {
            Some(url) => format!("installed by `shakedown run` from {url}"),
            None => format!(
                "apt-get install {} (`shakedown run` does this unless --no-install)",
                PACKAGES.join(" ")
            ),
        };
        ["etcd", "etcdctl"]
            .into_iter()
            .map(|name| Binary {
                name: name.into(),
                paths: vec![self.bin(name)],
                fix: fix.clone(),
            })
            .collect()
    }
}

impl Primaries for Etcd {
    fn primaries(
        &self,
        remotes: &[Arc<dyn Remote>],
        nodes: &[Node],
    ) -> Result<Vec<String>, DbError> {
        let endpoints: Vec<String> = nodes.iter().map(|n| self.client_url(n)).collect();
        let cmd = self.etcdctl([
            "--endpoints".into(),
            endpoints.join(","),
            "--dial-timeout=1s".into(),
            "--command-timeout=1s".into(),
            "endpoint".into(),
            "status".into(),
            "-w".into(),
            "json".into(),
        ]);
        let mut last = String::from("no nodes");
        for (remote, node) in remotes.iter().zip(nodes) {
            // Endpoints that do not answer make etcdctl exit non-zero after printing the others.
            match remote.exec(&cmd) {
                Ok(out) => {
                    let leaders = leaders_from_status(&out.stdout, nodes, self.cfg.client_port);
                    if !leaders.is_empty() {
                        return Ok(leaders);
                    }
                    last = format!(
                        "{}: no leader in etcdctl endpoint status: {} {}",
                        node.name,
                        out.stdout.trim(),
                        out.stderr.trim()
                    );
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(DbError::Other {
            node: nodes.first().map(|n| n.name.clone()).unwrap_or_default(),
            message: format!("cannot find the etcd leader from any node; last: {last}"),
        })
    }
}

impl Lifecycle for Etcd {
    fn layout(&self) -> Layout {
        Layout::new(&self.cfg.base_dir, "etcd", "etcd", EXE_PATTERN).retiring()
    }
    fn restart(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError> {
        self.start_process(remote, node, &Bootstrap::new_cluster(cluster))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn startup_failure_picks_the_error_entry() {
        let tail = "last lines of /tmp/x/etcd.log:\n{\"level\":\"info\",\"msg\":\"closed etcd server\"}\n{\"level\":\"fatal\",\"msg\":\"discovery failed\",\"error\":\"listen tcp 10.75.0.1:2379: bind: address already in use\"}";
        assert_eq!(
            startup_failure(tail),
            "discovery failed: listen tcp 10.75.0.1:2379: bind: address already in use"
        );
        assert_eq!(startup_failure("no log"), "no log");
    }

    #[test]
    fn leaders_are_mapped_from_member_ids_to_nodes() {
        let nodes: Vec<Node> = (1..=3)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.83.0.{i}"),
            })
            .collect();
        // Ids above 2^53 must survive parsing.
        let json = r#"[{"Endpoint":"http://10.83.0.1:2379","Status":{"header":{"member_id":17237436991929493444},"leader":9372538179322589801}},
{"Endpoint":"http://10.83.0.2:2379","Status":{"header":{"member_id":9372538179322589801},"leader":9372538179322589801}},
{"Endpoint":"http://10.83.0.3:2379","Status":{"header":{"member_id":5},"leader":5}}]"#;
        assert_eq!(leaders_from_status(json, &nodes, 2379), vec!["n2", "n3"]);
        assert!(leaders_from_status("[]", &nodes, 2379).is_empty());
        assert!(leaders_from_status("not json", &nodes, 2379).is_empty());
        let no_leader = r#"[{"Endpoint":"http://10.83.0.1:2379","Status":{"header":{"member_id":7},"leader":0}}]"#;
        assert!(leaders_from_status(no_leader, &nodes, 2379).is_empty());
    }

    #[test]
    fn command_names_every_member_and_binds_to_the_node_address() {
        let nodes: Vec<Node> = (1..=3)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.78.0.{i}"),
            })
            .collect();
        let etcd = Etcd::default();
        let cmd = etcd.command(&nodes[1], &Bootstrap::new_cluster(&nodes));
        let joined = cmd.join(" ");
        assert!(joined.contains("--name n2"));
        assert!(joined.contains("--initial-cluster-state new"));
        assert!(joined.contains("--listen-client-urls http://10.78.0.2:2379"));
        assert!(joined.contains(
            "n1=http://10.78.0.1:2380,n2=http://10.78.0.2:2380,n3=http://10.78.0.3:2380"
        ));
        assert!(joined.contains("--data-dir /tmp/shakedown/etcd/data"));
    }

    #[test]
    fn a_fresh_join_differs_from_the_first_start_only_in_its_bootstrap_flags() {
        let nodes: Vec<Node> = (1..=3)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.78.0.{i}"),
            })
            .collect();
        let etcd = Etcd::default();
        let first = etcd.command(&nodes[2], &Bootstrap::new_cluster(&nodes));
        // n3 joins n1 and n2, listed members first.
        let members_and_self = [nodes[0].clone(), nodes[2].clone()];
        let join = etcd.command(&nodes[2], &Bootstrap::join(&members_and_self));
        let differ: Vec<(&str, &str)> = first
            .iter()
            .zip(&join)
            .filter(|(a, b)| a != b)
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        assert_eq!(first.len(), join.len());
        assert_eq!(
            differ,
            [
                (
                    "n1=http://10.78.0.1:2380,n2=http://10.78.0.2:2380,n3=http://10.78.0.3:2380",
                    "n1=http://10.78.0.1:2380,n3=http://10.78.0.3:2380"
                ),
                ("new", "existing")
            ]
        );
    }
}
