//! Redis 7 with Sentinel as a system under test: one `redis-server` per node (the configured
//! primary, else the first node, is the primary; every other node starts as `replicaof` it) and
//! one `redis-sentinel` monitoring it on every node (on the first `--redis-sentinels` nodes when
//! given); readiness, kill -9 / restart and pause / resume
//! of `redis-server`, the primaries as the Sentinels see them, and failover by `SENTINEL
//! FAILOVER`.
//!
//! Layout on a node (all under `base_dir`, default `/tmp/shakedown/redis`, private per sandbox
//! node): `redis.conf` and `sentinel.conf` (written by `setup`; both servers rewrite their own
//! file — Sentinel records its id, the other Sentinels, the replicas and failovers; `redis.conf`
//! gets `replicaof` when Sentinel reconfigures the node — so a restarted server keeps its role),
//! `data/` (the append-only file, `appendfsync` per `--redis-appendfsync`, default `everysec`;
//! on the lose-unsynced layer when the nemesis has `power-loss`, see `nemesis::power`), `redis.log`, `sentinel.log` (each
//! server's stdout) and the pidfiles `redis.pid`, `sentinel.pid`. `setup` wipes all of it, so a
//! run never inherits a Sentinel's rewritten config. Both servers bind the node's address only
//! (Debian's own service, if the package started one, listens on 127.0.0.1 and never meets
//! them), run as root in the foreground under `setsid`, and are started over SSH, so in the
//! sandbox they load the clock shim like every program started there.
//!
//! Faults: kill and pause act on `redis-server` only; the Sentinels keep running (they are the
//! failure detector under test). `primaries` asks every Sentinel
//! (`SENTINEL get-master-addr-by-name`) and returns the answer of a majority of all Sentinels,
//! or every distinct answer when no majority agrees. `promote` asks the chosen node's Sentinel
//! (the first Sentinel when the node runs none) for
//! `SENTINEL FAILOVER` and waits until it names a new master: Sentinel, not the nemesis, chooses
//! which replica it promotes (by replica priority and replication offset), so the promoted node
//! may differ from the Sentinel asked. Does not own the client protocol (`client`).

use crate::control::{Cmd, Remote};
use crate::db::Abilities;
use crate::db::{Binary, Db, DbError, Kill, Pause, Primaries, Promote};
use crate::node::Node;
use crate::systems::lifecycle::{Layout, Lifecycle};
use crate::systems::ready;
use crate::systems::strays::Signal;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// The name the Sentinels monitor the primary under (`sentinel monitor NAME …`).
pub const MASTER_NAME: &str = "shakedown";

/// How to run Redis and Sentinel on the nodes. Fields missing from a recorded config take their
/// defaults.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct RedisConfig {
    /// Directory on each node holding configs, data, logs and pidfiles.
    pub base_dir: String,
    /// Redis port on every node.
    pub port: u16,
    /// Sentinel port on every node.
    pub sentinel_port: u16,
    /// Name of the initial primary; `None` = the first node of the cluster.
    pub primary: Option<String>,
    /// Sentinels that must agree the primary is down before a failover; `None` = a majority of
    /// the Sentinels.
    pub quorum: Option<u32>,
    /// Sentinels on the first this many nodes of the cluster; `None` = one on every node.
    /// Production deployments run three or five whatever the replica count: every Sentinel
    /// talks to every server and every other Sentinel, so one per node grows as N² (N³ hello
    /// messages) and does not fit 100 nodes on one machine.
    pub sentinels: Option<u32>,
    /// `sentinel down-after-milliseconds`: silence after which a Sentinel thinks a server down.
    pub down_after_ms: u64,
    /// `sentinel failover-timeout`.
    pub failover_timeout_ms: u64,
    /// `WAIT N` after every write: the replicas that must acknowledge it (0 = no WAIT).
    pub wait_replicas: u32,
    /// Timeout of that `WAIT`, in ms.
    pub wait_timeout_ms: u64,
    /// How long setup and readiness may wait.
    pub ready_timeout_ms: u64,
    /// `appendfsync` of the append-only file: `everysec` (Redis' default), `always` or `no`.
    pub appendfsync: String,
    /// The `shakedown` binary serving `data/` from the lose-unsynced layer (runs with the
    /// `power-loss` fault); `None`: a plain directory.
    pub lazyfs: Option<String>,
}

/// The `appendfsync` policies Redis knows.
pub const APPENDFSYNC: [&str; 3] = ["everysec", "always", "no"];

impl Default for RedisConfig {
    fn default() -> Self {
        RedisConfig {
            base_dir: "/tmp/shakedown/redis".into(),
            port: 6379,
            sentinel_port: 26379,
            primary: None,
            quorum: None,
            sentinels: None,
            down_after_ms: 2000,
            failover_timeout_ms: 6000,
            wait_replicas: 0,
            wait_timeout_ms: 500,
            ready_timeout_ms: 60_000,
            appendfsync: "everysec".into(),
            lazyfs: None,
        }
    }
}

impl RedisConfig {
    /// How many Sentinels a cluster of `nodes` nodes runs (on its first nodes).
    pub fn sentinel_count(&self, nodes: usize) -> usize {
        self.sentinels.map_or(nodes, |k| (k as usize).min(nodes))
    }

    /// The nodes that run a Sentinel: the first [`Self::sentinel_count`] of the cluster.
    pub fn sentinel_nodes<'a>(&self, cluster: &'a [Node]) -> &'a [Node] {
        &cluster[..self.sentinel_count(cluster.len())]
    }

    /// Whether `node` of `cluster` runs a Sentinel.
    pub fn has_sentinel(&self, node: &Node, cluster: &[Node]) -> bool {
        self.sentinel_nodes(cluster)
            .iter()
            .any(|n| n.name == node.name)
    }

    /// The quorum in effect on a cluster of `nodes` nodes: the configured one, else a majority
    /// of its Sentinels.
    pub fn effective_quorum(&self, nodes: usize) -> u32 {
        self.quorum
            .unwrap_or(self.sentinel_count(nodes) as u32 / 2 + 1)
    }

    /// Refuse a quorum Sentinel could never reach (0, or more than the Sentinels); the error
    /// is the reason, for `--redis-quorum`.
    pub fn check_quorum(&self, nodes: usize) -> Result<(), String> {
        let k = self.sentinel_count(nodes);
        let where_ = if k == nodes {
            format!("the {nodes} nodes (one Sentinel per node)")
        } else {
            format!("the {k} Sentinels (--redis-sentinels)")
        };
        match self.quorum {
            Some(0) => Err("the quorum must be at least 1".into()),
            Some(q) if q as usize > k => {
                Err(format!("quorum {q} needs more Sentinels than {where_}"))
            }
            _ => Ok(()),
        }
    }

    /// Refuse a Sentinel count a cluster of `nodes` cannot run (0, or more than the nodes);
    /// the error is the reason, for `--redis-sentinels`.
    pub fn check_sentinels(&self, nodes: usize) -> Result<(), String> {
        match self.sentinels {
            Some(0) => Err("at least one Sentinel is needed to find the primary".into()),
            Some(k) if k as usize > nodes => Err(format!(
                "{k} Sentinels need {k} nodes (one per node, on the first ones); the cluster has {nodes}"
            )),
            _ => Ok(()),
        }
    }
}

/// The node Sentinel last named as primary (shared by every clone of a [`Redis`]): the promote
/// fault's candidates are the other nodes.
pub type PrimarySlot = Arc<Mutex<Option<String>>>;

/// Redis + Sentinel.
#[derive(Debug, Clone, Default)]
pub struct Redis {
    /// Settings.
    pub cfg: RedisConfig,
    /// The last primary the Sentinels named (`None` before any was asked: the configured one).
    pub last_primary: PrimarySlot,
}

/// Debian's Redis and Sentinel. The package may start its own service on
/// 127.0.0.1:6379/26379; ours bind node addresses, so the two never meet.
const PACKAGES: [&str; 2] = ["redis-server", "redis-sentinel"];

/// Remove everything a previous run left: `$1` = base dir.
const WIPE_SCRIPT: &str = r#"set -e
rm -rf "$1"
mkdir -p "$1/data"
"#;

/// Start one server unless its pidfile names a live Redis process: `$1` = base dir, `$2` =
/// `redis` or `sentinel`. The server is the leader of its own session; its stdout is its log.
const START_SCRIPT: &str = concat!(
    crate::systems::strays::live_sh!(),
    r#"set -e
dir="$1"; which="$2"
pid=$(cat "$dir/$which.pid" 2>/dev/null || true)
if live "$pid" redis; then exit 0; fi
if [ "$which" = redis ]; then prog=redis-server; else prog=redis-sentinel; fi
cd "$dir"
setsid "$prog" "$dir/$which.conf" >> "$dir/$which.log" 2>&1 < /dev/null &
echo $! > "$dir/$which.pid"
"#
);

/// The file names of our servers' executable (`redis-server` and `redis-sentinel` are links
/// to `redis-check-rdb` on Debian), for [`crate::systems::strays::sweep`].
const EXE_PATTERN: &str = "^redis-(server|sentinel|check-rdb)( |$)";

/// Readiness of one node: `$1` = base dir, `$2` = host, `$3` = port, `$4` = Sentinel port,
/// `$5` = `primary` or `replica`, `$6` = master name, `$7` = the primary's host, `$8` = nodes in
/// the cluster, `$9` = Sentinels in the cluster, `${10}` = `1` when this node runs one. Redis
/// answers (a replica's link to the primary is up); the node's Sentinel, if it has one, names
/// the primary and sees every replica and every other Sentinel. After faults (`$5` = `$7` =
/// `any`): whichever role the node has now (a replica's link up), its Sentinel naming some
/// primary and seeing every other Sentinel, however far the replicas' move to a new primary has
/// got (Sentinel moves them one at a time).
const READY_SCRIPT: &str = concat!(
    crate::systems::strays::live_sh!(),
    crate::systems::strays::log_tail_sh!(),
    r#"dir="$1"; host="$2"; port="$3"; sport="$4"; role="$5"; name="$6"; primary="$7"; n="$8"
k="$9"; mine="${10}"
servers=redis; [ "$mine" = 1 ] && servers="redis sentinel"
for which in $servers; do
  pid=$(cat "$dir/$which.pid" 2>/dev/null || true)
  if ! live "$pid" redis; then
    echo "$which is not running;"
    log_tail "$dir/$which.log" 5
    exit 3
  fi
done
pong=$(timeout 2 redis-cli -h "$host" -p "$port" PING 2>&1)
[ "$pong" = PONG ] || { echo "redis on $host:$port: $pong" | cut -c1-300; exit 1; }
if [ "$role" = any ]; then
  now=$(timeout 2 redis-cli -h "$host" -p "$port" INFO replication 2>&1 | tr -d '\r' | grep '^role:')
  [ "$now" = role:slave ] && role=replica
fi
if [ "$role" = replica ]; then
  link=$(timeout 2 redis-cli -h "$host" -p "$port" INFO replication 2>&1 | tr -d '\r' | grep '^master_link_status:')
  [ "$link" = master_link_status:up ] || { echo "replica link to the primary: ${link:-unknown}"; exit 1; }
fi
[ "$mine" = 1 ] || exit 0
got=$(timeout 2 redis-cli -h "$host" -p "$sport" SENTINEL get-master-addr-by-name "$name" 2>&1 | head -n 1)
if [ "$primary" = any ]; then
  [ -n "$got" ] || { echo "sentinel names no primary" | cut -c1-300; exit 1; }
else
  [ "$got" = "$primary" ] || { echo "sentinel names primary ${got:-none}, expected $primary" | cut -c1-300; exit 1; }
fi
info=$(timeout 2 redis-cli -h "$host" -p "$sport" SENTINEL master "$name" 2>&1 | tr -d '\r')
field() { printf '%s\n' "$info" | awk -v k="$1" 'prev==k {print; exit} {prev=$0}'; }
others=$(field num-other-sentinels); replicas=$(field num-slaves)
[ "$others" = $((k-1)) ] || { echo "sentinel sees ${others:-no} other sentinels of $((k-1))"; exit 1; }
[ "$primary" = any ] || [ "$replicas" = $((n-1)) ] || { echo "sentinel sees ${replicas:-no} replicas of $((n-1))"; exit 1; }
"#
);

/// Ask a node's Sentinel for the primary's address: `$1` = host, `$2` = Sentinel port, `$3` =
/// master name. Prints the host.
const MASTER_ADDR_SCRIPT: &str = r#"out=$(timeout 2 redis-cli -h "$1" -p "$2" SENTINEL get-master-addr-by-name "$3" 2>&1) || { echo "$out" | head -n 2 >&2; exit 1; }
printf '%s\n' "$out" | head -n 1
"#;

/// `SENTINEL FAILOVER` on a node's Sentinel, then wait until it names a new primary: `$1` = host,
/// `$2` = Sentinel port, `$3` = master name, `$4` = seconds to wait. Prints the new primary's
/// host.
const FAILOVER_SCRIPT: &str = r#"host="$1"; sport="$2"; name="$3"; wait_s="$4"
ask() { timeout 2 redis-cli -h "$host" -p "$sport" "$@" 2>&1; }
old=$(ask SENTINEL get-master-addr-by-name "$name" | head -n 1)
out=$(ask SENTINEL FAILOVER "$name")
[ "$out" = OK ] || { echo "SENTINEL FAILOVER: $out" | cut -c1-300 >&2; exit 1; }
i=0
while [ $i -lt $((wait_s*10)) ]; do
  now=$(ask SENTINEL get-master-addr-by-name "$name" | head -n 1)
  if [ -n "$now" ] && [ "$now" != "$old" ]; then echo "$now"; exit 0; fi
  sleep 0.1; i=$((i+1))
done
echo "no new primary after ${wait_s} s (still $old)" >&2
exit 1
"#;

impl Redis {
    /// A Redis system with the given settings.
    pub fn new(cfg: RedisConfig) -> Redis {
        Redis {
            cfg,
            last_primary: PrimarySlot::default(),
        }
    }

    /// The configured primary of `cluster` (the first node unless `primary` names one).
    pub fn initial_primary<'a>(&self, cluster: &'a [Node]) -> Option<&'a Node> {
        match &self.cfg.primary {
            Some(name) => cluster.iter().find(|n| &n.name == name),
            None => cluster.first(),
        }
    }

    /// `redis.conf` of `node`: bound to its address, replica of `primary` unless it is it.
    pub fn redis_conf(&self, node: &Node, primary: &Node) -> String {
        let dir = &self.cfg.base_dir;
        let mut conf = format!(
            "bind {host}\nport {port}\nprotected-mode no\ndaemonize no\nlogfile \"\"\n\
             dir {dir}/data\nappendonly yes\nappendfsync {fsync}\nsave \"\"\n\
             repl-diskless-sync-delay 0\nreplica-read-only yes\n",
            host = node.host,
            port = self.cfg.port,
            fsync = self.cfg.appendfsync,
        );
        if node.name != primary.name {
            conf.push_str(&format!("replicaof {} {}\n", primary.host, self.cfg.port));
        }
        conf
    }

    /// `sentinel.conf` of `node` in a cluster of `nodes` nodes, monitoring `primary`.
    pub fn sentinel_conf(&self, node: &Node, primary: &Node, nodes: usize) -> String {
        let c = &self.cfg;
        format!(
            "port {sport}\nbind {host}\nprotected-mode no\ndaemonize no\nlogfile \"\"\n\
             dir {dir}\nsentinel resolve-hostnames yes\n\
             sentinel monitor {MASTER_NAME} {phost} {port} {quorum}\n\
             sentinel down-after-milliseconds {MASTER_NAME} {down}\n\
             sentinel failover-timeout {MASTER_NAME} {ft}\n\
             sentinel parallel-syncs {MASTER_NAME} 1\n",
            sport = c.sentinel_port,
            host = node.host,
            dir = c.base_dir,
            phost = primary.host,
            port = c.port,
            quorum = c.effective_quorum(nodes),
            down = c.down_after_ms,
            ft = c.failover_timeout_ms,
        )
    }

    /// Send `sig` to one server, `redis` or `sentinel`, alone (the shared signal script: not
    /// its children, such as a snapshot being written).
    fn signal_one(&self, remote: &dyn Remote, which: &str, sig: Signal) -> Result<(), DbError> {
        let mut server = self.layout().server;
        server.pidfile = format!("{}/{which}.pid", self.cfg.base_dir);
        server.signal(remote, sig)
    }

    fn start_server(&self, remote: &dyn Remote, which: &str) -> Result<(), DbError> {
        remote
            .exec_ok(&Cmd::script(START_SCRIPT, [self.cfg.base_dir.as_str(), which]).sudo(true))?;
        Ok(())
    }

    /// Block until `node` serves (a replica's link is up) and its Sentinel names the initial
    /// primary and sees every replica and Sentinel, or time out; fails at once with the log tail
    /// when a server process is gone.
    pub fn await_ready(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        let primary = self
            .initial_primary(cluster)
            .ok_or_else(|| DbError::Other {
                node: node.name.clone(),
                message: "the configured primary is not among the nodes".into(),
            })?;
        let role = if primary.name == node.name {
            "primary"
        } else {
            "replica"
        };
        self.await_serving(remote, node, cluster, Some((role, &primary.host)))
    }

    /// Block until `node` serves again after faults: whatever its role now (a replica's link
    /// up), its Sentinel naming some primary, as a failover may have moved it. The initial
    /// primary is no longer expected (waiting for it cost every run with a failover the whole
    /// recovery bound), nor every replica under the new one (Sentinel moves them one at a time:
    /// 99 full syncs at 100 nodes).
    pub fn await_recovered(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        self.await_serving(remote, node, cluster, None)
    }

    /// [`READY_SCRIPT`] polled on `node` until it passes: with `expected`, the node's role and
    /// the primary's host as given; `None`, whichever (the script's `any`).
    fn await_serving(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
        expected: Option<(&str, &str)>,
    ) -> Result<(), DbError> {
        const ANY: &str = "any";
        let (role, primary) = expected.unwrap_or((ANY, ANY));
        let sentinel = self.cfg.has_sentinel(node, cluster);
        let cmd = Cmd::script(
            READY_SCRIPT,
            [
                self.cfg.base_dir.clone(),
                node.host.clone(),
                self.cfg.port.to_string(),
                self.cfg.sentinel_port.to_string(),
                role.to_string(),
                MASTER_NAME.to_string(),
                primary.to_string(),
                cluster.len().to_string(),
                self.cfg.sentinel_count(cluster.len()).to_string(),
                u8::from(sentinel).to_string(),
            ],
        );
        let how = ready::Readiness {
            server: "redis",
            what: format!(
                "redis{}{}",
                expected.map_or(String::new(), |(role, _)| format!(" {role}")),
                if sentinel { " and its sentinel" } else { "" }
            ),
            timeout_ms: self.cfg.ready_timeout_ms,
            interval_ms: 250,
            exited: ready::trimmed,
        };
        ready::poll(remote, node, &cmd, &how)
    }

    fn remember_primary(&self, name: &str) {
        *self.last_primary.lock().unwrap_or_else(|p| p.into_inner()) = Some(name.to_string());
    }
}

/// The node whose address is `host`.
fn node_named_by<'a>(cluster: &'a [Node], host: &str) -> Option<&'a Node> {
    cluster.iter().find(|n| n.host == host || n.name == host)
}

/// The Sentinels' answer: the host a majority of all `sentinels` named, else every distinct
/// answer (in the order first given). Empty when no Sentinel answered.
pub fn majority_answer(answers: &[String], sentinels: usize) -> Vec<String> {
    let mut distinct: Vec<(String, usize)> = Vec::new();
    for a in answers {
        match distinct.iter_mut().find(|(h, _)| h == a) {
            Some((_, n)) => *n += 1,
            None => distinct.push((a.clone(), 1)),
        }
    }
    if let Some((h, _)) = distinct.iter().find(|(_, n)| *n > sentinels / 2) {
        return vec![h.clone()];
    }
    distinct.into_iter().map(|(h, _)| h).collect()
}

impl Abilities for Redis {
    fn name(&self) -> &str {
        "redis"
    }
    fn data_dir(&self) -> Option<String> {
        Some(self.data_path())
    }
    /// the append-only files (Redis 7 keeps them in `appendonlydir/`) and any RDB file (`save ""` writes none, but a replica's full sync leaves one).
    fn data_files(&self) -> Vec<String> {
        ["appendonlydir/*", "*.aof", "*.rdb"]
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
    fn as_promote(&self) -> Option<&dyn Promote> {
        Some(self)
    }
    fn as_primaries(&self) -> Option<&dyn Primaries> {
        Some(self)
    }
}

impl Db for Redis {
    fn packages(&self) -> Vec<String> {
        PACKAGES.iter().map(|p| p.to_string()).collect()
    }

    fn setup(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError> {
        let primary = self
            .initial_primary(cluster)
            .ok_or_else(|| DbError::Other {
                node: node.name.clone(),
                message: "the configured primary is not among the nodes".into(),
            })?;
        self.cfg
            .check_sentinels(cluster.len())
            .and_then(|()| self.cfg.check_quorum(cluster.len()))
            .map_err(|message| DbError::Other {
                node: node.name.clone(),
                message,
            })?;
        // A layer an earlier run left mounted (stale or not) goes before the wipe.
        self.stop(remote)?;
        remote.exec_ok(&Cmd::script(WIPE_SCRIPT, [self.cfg.base_dir.as_str()]).sudo(true))?;
        self.mount_layer(remote, true)?;
        let dir = &self.cfg.base_dir;
        remote.upload(
            self.redis_conf(node, primary).as_bytes(),
            &format!("{dir}/redis.conf"),
            0o644,
        )?;
        let sentinel = self.cfg.has_sentinel(node, cluster);
        if sentinel {
            remote.upload(
                self.sentinel_conf(node, primary, cluster.len()).as_bytes(),
                &format!("{dir}/sentinel.conf"),
                0o644,
            )?;
        }
        *self.last_primary.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self.start_server(remote, "redis")?;
        if sentinel {
            self.start_server(remote, "sentinel")?;
        }
        Ok(())
    }

    fn teardown(&self, remote: &dyn Remote, _node: &Node) -> Result<(), DbError> {
        self.stop(remote)
    }

    fn log_files(&self, _node: &Node) -> Vec<String> {
        let dir = &self.cfg.base_dir;
        vec![format!("{dir}/redis.log"), format!("{dir}/sentinel.log")]
    }

    fn version(&self, remote: &dyn Remote) -> Option<String> {
        let out = remote
            .exec_ok(&Cmd::new("redis-server").arg("--version"))
            .ok()?;
        out.lines().next().map(|l| l.trim().to_string())
    }

    fn required_binaries(&self) -> Vec<Binary> {
        let fix = format!(
            "apt-get install {} (`shakedown run --db redis` does this unless --no-install)",
            PACKAGES.join(" ")
        );
        ["redis-server", "redis-sentinel", "redis-cli"]
            .into_iter()
            .map(|name| Binary {
                name: name.into(),
                paths: vec![],
                fix: fix.clone(),
            })
            .collect()
    }
}

/// Kill, pause and `db-status` act on `redis-server` only, alone (not a snapshot child it
/// forked): its Sentinel is not the database (it is the failure detector under test).
impl Lifecycle for Redis {
    fn layout(&self) -> Layout {
        Layout::new(&self.cfg.base_dir, "redis", "redis", EXE_PATTERN)
            .sudo()
            .alone()
    }
    /// `redis-server` again from its (possibly Sentinel-rewritten) config and its append-only
    /// file; a former primary comes back as a primary until Sentinel turns it into a replica of
    /// the current one.
    fn restart(&self, remote: &dyn Remote, _node: &Node, _cluster: &[Node]) -> Result<(), DbError> {
        self.start_server(remote, "redis")
    }
    /// Both servers, Sentinel after Redis.
    fn end_servers(&self, remote: &dyn Remote) -> Result<(), DbError> {
        for which in ["redis", "sentinel"] {
            self.signal_one(remote, which, Signal::Cont)?;
            self.signal_one(remote, which, Signal::Kill)?;
        }
        Ok(())
    }
}

impl Primaries for Redis {
    fn primaries(
        &self,
        remotes: &[Arc<dyn Remote>],
        nodes: &[Node],
    ) -> Result<Vec<String>, DbError> {
        let mut answers = Vec::new();
        let mut errors = Vec::new();
        let sentinels = self.cfg.sentinel_count(nodes.len());
        for (remote, node) in remotes.iter().zip(nodes).take(sentinels) {
            let cmd = Cmd::script(
                MASTER_ADDR_SCRIPT,
                [
                    node.host.clone(),
                    self.cfg.sentinel_port.to_string(),
                    MASTER_NAME.to_string(),
                ],
            );
            match remote.exec_ok(&cmd) {
                Ok(out) => match node_named_by(nodes, out.trim()) {
                    Some(p) => answers.push(p.name.clone()),
                    None => errors.push(format!("{}: sentinel named {:?}", node.name, out.trim())),
                },
                Err(e) => errors.push(e.to_string()),
            }
        }
        let chosen = majority_answer(&answers, sentinels);
        if chosen.is_empty() {
            return Err(DbError::Other {
                node: nodes.first().map(|n| n.name.clone()).unwrap_or_default(),
                message: format!("no sentinel named a primary: {}", errors.join("; ")),
            });
        }
        if chosen.len() == 1 {
            self.remember_primary(&chosen[0]);
        }
        Ok(chosen)
    }
}

impl Promote for Redis {
    /// Every node but the primary the Sentinels last named (the configured one before any was
    /// asked).
    fn candidates(&self, cluster: &[Node]) -> Vec<String> {
        let last = self
            .last_primary
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .or_else(|| self.initial_primary(cluster).map(|n| n.name.clone()));
        cluster
            .iter()
            .filter(|n| Some(&n.name) != last.as_ref())
            .map(|n| n.name.clone())
            .collect()
    }

    /// `SENTINEL FAILOVER` asked of `node`'s Sentinel (of the first Sentinel's when `node`
    /// runs none, from `node`); waits (up to the failover timeout) until that Sentinel names a
    /// new primary, which Sentinel chose.
    fn promote(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError> {
        let wait_s = (self.cfg.failover_timeout_ms / 1000).max(5);
        let asked = if self.cfg.has_sentinel(node, cluster) {
            node
        } else {
            self.cfg.sentinel_nodes(cluster).first().unwrap_or(node)
        };
        let out = remote.exec(
            &Cmd::script(
                FAILOVER_SCRIPT,
                [
                    asked.host.clone(),
                    self.cfg.sentinel_port.to_string(),
                    MASTER_NAME.to_string(),
                    wait_s.to_string(),
                ],
            )
            .timeout_ms(wait_s * 1000 + 10_000),
        )?;
        if !out.success() {
            return Err(DbError::Other {
                node: node.name.clone(),
                message: format!("sentinel failover: {}", out.stderr.trim()),
            });
        }
        if let Some(p) = node_named_by(cluster, out.stdout.trim()) {
            self.remember_primary(&p.name);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(k: usize) -> Vec<Node> {
        (1..=k)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.87.0.{i}"),
            })
            .collect()
    }

    #[test]
    fn configs_bind_the_node_and_point_replicas_and_sentinels_at_the_primary() {
        let cluster = nodes(5);
        let r = Redis::new(RedisConfig {
            down_after_ms: 1500,
            ..Default::default()
        });
        let p = r.initial_primary(&cluster).unwrap();
        assert_eq!(p.name, "n1");
        let primary_conf = r.redis_conf(&cluster[0], p);
        assert!(primary_conf.contains("bind 10.87.0.1\n"), "{primary_conf}");
        assert!(!primary_conf.contains("replicaof"), "{primary_conf}");
        let replica_conf = r.redis_conf(&cluster[2], p);
        assert!(replica_conf.contains("bind 10.87.0.3\n"));
        assert!(replica_conf.contains("replicaof 10.87.0.1 6379\n"));
        assert!(replica_conf.contains("dir /tmp/shakedown/redis/data\n"));
        let s = r.sentinel_conf(&cluster[3], p, 5);
        assert!(s.contains("bind 10.87.0.4\n"));
        assert!(
            s.contains("sentinel monitor shakedown 10.87.0.1 6379 3\n"),
            "{s}"
        );
        assert!(s.contains("sentinel down-after-milliseconds shakedown 1500\n"));
        assert!(s.contains("sentinel failover-timeout shakedown 6000\n"));
        // resolve-hostnames must come before the monitor line that may use a name.
        assert!(s.find("resolve-hostnames").unwrap() < s.find("monitor").unwrap());
    }

    #[test]
    fn quorum_defaults_to_a_majority_and_impossible_ones_are_refused() {
        let mut c = RedisConfig::default();
        assert_eq!(c.effective_quorum(5), 3);
        assert_eq!(c.effective_quorum(3), 2);
        assert_eq!(c.effective_quorum(1), 1);
        assert!(c.check_quorum(5).is_ok());
        c.quorum = Some(0);
        assert!(c.check_quorum(5).unwrap_err().contains("at least 1"));
        c.quorum = Some(6);
        let e = c.check_quorum(5).unwrap_err();
        assert!(e.contains("quorum 6") && e.contains("5 nodes"), "{e}");
        c.quorum = Some(5);
        assert!(c.check_quorum(5).is_ok());
        assert_eq!(c.effective_quorum(5), 5);
    }

    #[test]
    fn sentinels_run_on_the_first_nodes_and_set_the_default_quorum() {
        let cluster = nodes(100);
        let mut c = RedisConfig {
            sentinels: Some(5),
            ..Default::default()
        };
        assert_eq!(c.sentinel_count(100), 5);
        let names: Vec<&str> = c
            .sentinel_nodes(&cluster)
            .iter()
            .map(|n| n.name.as_str())
            .collect();
        assert_eq!(names, ["n1", "n2", "n3", "n4", "n5"]);
        assert!(c.has_sentinel(&cluster[4], &cluster));
        assert!(!c.has_sentinel(&cluster[5], &cluster));
        // The quorum is a majority of the Sentinels, not of the nodes.
        assert_eq!(c.effective_quorum(100), 3);
        let r = Redis::new(c.clone());
        assert!(
            r.sentinel_conf(&cluster[0], &cluster[0], 100)
                .contains("sentinel monitor shakedown 10.87.0.1 6379 3\n")
        );
        c.quorum = Some(6);
        let e = c.check_quorum(100).unwrap_err();
        assert!(e.contains("quorum 6") && e.contains("5 Sentinels"), "{e}");
        // More Sentinels than nodes, or none, is refused; by default every node runs one.
        assert!(c.check_sentinels(5).is_ok());
        let e = c.check_sentinels(4).unwrap_err();
        assert!(e.contains("5 Sentinels") && e.contains("has 4"), "{e}");
        c.sentinels = Some(0);
        assert!(c.check_sentinels(4).unwrap_err().contains("at least one"));
        let every = RedisConfig::default();
        assert_eq!(every.sentinel_count(7), 7);
        assert!(every.has_sentinel(&cluster[6], &cluster[..7]));
    }

    #[test]
    fn primaries_are_the_majority_answer_else_every_answer() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            majority_answer(&s(&["n2", "n2", "n1", "n2", "n2"]), 5),
            ["n2"]
        );
        // An isolated primary's Sentinel still names it; the other four moved on.
        assert_eq!(majority_answer(&s(&["n1", "n2", "n2", "n2"]), 5), ["n2"]);
        assert_eq!(
            majority_answer(&s(&["n1", "n1", "n2", "n2"]), 5),
            ["n1", "n2"]
        );
        assert_eq!(majority_answer(&s(&["n1"]), 5), ["n1"]);
        assert!(majority_answer(&[], 5).is_empty());
    }

    #[test]
    fn promote_candidates_follow_the_last_named_primary() {
        let cluster = nodes(3);
        let r = Redis::default();
        assert_eq!(r.candidates(&cluster), ["n2", "n3"]);
        r.remember_primary("n3");
        assert_eq!(r.candidates(&cluster), ["n1", "n2"]);
        let names: Vec<String> = r.required_binaries().into_iter().map(|b| b.name).collect();
        assert_eq!(names, ["redis-server", "redis-sentinel", "redis-cli"]);
    }
}
