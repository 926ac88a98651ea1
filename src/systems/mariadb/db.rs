//! MariaDB 10.11 on the nodes, in either topology (`MariaDbConfig::topology`): `--db galera`,
//! one `mariadbd` per node, every node a primary of a multi-primary Galera 4 cluster
//! (bootstrap, joins by rsync state transfer, `--wsrep-recover` on restart); or `--db mariadb`,
//! the first node a primary and the others asynchronous GTID replicas of it (`replication`
//! owns what differs: their config lines, replication set-up and readiness). Both share the
//! layout, wipe, install, start, kill -9 / restart, pause / resume, logs and the schema.
//!
//! Layout on a node (all under `base_dir`, default `/tmp/shakedown/mariadb`, private per sandbox
//! node): `my.cnf` (the node's whole configuration, written by `setup` and passed as
//! `--defaults-file`, so Debian's shared `/etc/mysql` is never read), `data/` (the datadir,
//! wiped by `setup`), `mysqld.sock`, `server.pid` (the server's own pidfile), `mariadbd.pid`
//! (ours: the PID we started), `error.log` (the server's error log, collected at teardown) and
//! `recover.log` (what `--wsrep-recover` printed before a restart). The server is started by
//! root and runs as `mysql` (`user=mysql`: as root, rsync's daemon in a state transfer writes
//! as `nobody` and the join fails), binds the node's address, skips name resolution, and
//! listens for Galera
//! (`gmcast.listen_addr`), incremental state transfer (`ist.recv_addr`) and rsync state transfer
//! (`wsrep_sst_receive_address`) on the node's address only.
//!
//! Galera start-up: the first node of the cluster runs `mariadb-install-db`, starts with
//! `--wsrep-new-cluster`, waits until it is `Synced`, creates the `shakedown` database, its
//! tables and a passwordless `shakedown@%` user (replicated to the joiners), and writes a
//! marker row; every other node installs its own datadir, waits for the marker on the first
//! node, and starts with `wsrep_cluster_address` listing every node: it joins with a full
//! (rsync) state transfer. Ready = the node says `wsrep_local_state_comment = Synced`,
//! `wsrep_ready = ON` and `wsrep_cluster_size` = the number of nodes.
//!
//! Galera kill and restart: `kill -9` of `mariadbd` (and any state-transfer child). A restart first runs
//! `mariadbd --wsrep-recover` (InnoDB recovery only, then it prints the last committed
//! position) and starts with `--wsrep-start-position` set to it, so the node asks the others for
//! an incremental transfer instead of a full one. After every node was killed no node is safe
//! to bootstrap (`safe_to_bootstrap: 0`): started together they re-form the primary component
//! from their saved view (`pc.recovery`, Galera's default). With the `power-loss` fault,
//! `data/` is served from the lose-unsynced layer (`nemesis::power`), mounted after the wipe
//! and handed to the server's user. Does not own the clients (`txn`, `kv`) or the settings'
//! flags (`mod.rs`).

use super::replication::Topology;
use crate::control::{Cmd, Remote};
use crate::db::Abilities;
use crate::db::{Binary, Db, DbError, Kill, Pause};
use crate::node::Node;
use crate::systems::lifecycle::{Layout, Lifecycle};
use crate::systems::ready;
use serde::{Deserialize, Serialize};

/// Debian's MariaDB server (all asynchronous replication needs), the Galera 4 provider and
/// rsync for state transfers. The server
/// package's own service is not started by us (and, where an init system starts it, listens on
/// localhost with `/etc/mysql`'s files, which ours never read).
const PACKAGES: [&str; 3] = ["mariadb-server", "galera-4", "rsync"];

/// The Galera provider library Debian's `galera-4` installs.
pub const PROVIDER: &str = "/usr/lib/galera/libgalera_smm.so";

/// The database every workload table lives in.
pub const DATABASE: &str = "shakedown";
/// The user clients log in as (no password, any host).
pub const USER: &str = "shakedown";

/// The server executable's file name, for [`crate::systems::strays::sweep`].
const EXE_PATTERN: &str = "^(mariadbd|mysqld|rsync)$";

/// How to run MariaDB / Galera on the nodes. Fields missing from a recorded config take their
/// defaults.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct MariaDbConfig {
    /// Galera (multi-primary) or a primary with asynchronous replicas: set from the `--db`
    /// name (`SystemConfig`'s variant) when the system is opened, never recorded.
    #[serde(skip)]
    pub topology: super::replication::Topology,
    /// Directory on each node holding config, data, socket, pidfiles and logs.
    pub base_dir: String,
    /// OS user the server runs as (`user=`; rsync state transfers as root would run their
    /// daemon as `nobody`, which cannot write the datadir).
    pub os_user: String,
    /// SQL port on every node.
    pub port: u16,
    /// Galera group communication port (`gmcast.listen_addr`).
    pub galera_port: u16,
    /// Incremental state transfer port (`ist.recv_addr`).
    pub ist_port: u16,
    /// rsync state transfer port (`wsrep_sst_receive_address`).
    pub sst_port: u16,
    /// `innodb_flush_log_at_trx_commit`: 1 = flush the redo log at every commit (default),
    /// 2 = write at commit and flush once a second, 0 = write and flush once a second.
    pub flush_log_at_trx_commit: u8,
    /// `sync_binlog` with the binary log on; `None` = Galera: no binary log (it does not need
    /// one); asynchronous replication: the binary log with the server's default.
    pub sync_binlog: Option<u32>,
    /// `wsrep_sync_wait`: causality checks before reads (0 = none, 1 = before reads, … 15 = all).
    pub wsrep_sync_wait: u8,
    /// `innodb_snapshot_isolation`: refuse writes to rows changed since the transaction's
    /// read view at repeatable read (off by default in 10.11).
    pub snapshot_isolation: bool,
    /// Isolation level of the txn workload's transactions (`--isolation`); `None` = not given
    /// (MariaDB's default, repeatable read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isolation: Option<super::txn::Isolation>,
    /// Where each transaction goes (`--write-to`).
    pub write_to: super::WriteTo,
    /// How long setup and readiness may wait (bootstrap, every join's state transfer).
    pub ready_timeout_ms: u64,
    /// The `shakedown` binary serving `data/` from the lose-unsynced layer (runs with the
    /// `power-loss` fault); `None`: a plain directory.
    pub lazyfs: Option<String>,
}

impl Default for MariaDbConfig {
    fn default() -> Self {
        MariaDbConfig {
            topology: Default::default(),
            base_dir: "/tmp/shakedown/mariadb".into(),
            os_user: "mysql".into(),
            port: 3306,
            galera_port: 4567,
            ist_port: 4568,
            sst_port: 4444,
            flush_log_at_trx_commit: 1,
            sync_binlog: None,
            wsrep_sync_wait: 0,
            snapshot_isolation: false,
            isolation: None,
            write_to: super::WriteTo::Own,
            ready_timeout_ms: 120_000,
            lazyfs: None,
        }
    }
}

/// A MariaDB cluster of either topology.
#[derive(Debug, Clone, Default)]
pub struct MariaDb {
    /// Settings.
    pub cfg: MariaDbConfig,
}

/// The schema the workloads use, created on the first node once it is up (and replicated to
/// the others), and the marker row the other nodes wait for. The client user has privileges
/// on the `shakedown` database only: neither `SUPER` nor `READ_ONLY ADMIN`, so a replica's
/// `read_only=1` refuses its writes (error 1290).
pub const SCHEMA_SQL: &str = "CREATE DATABASE IF NOT EXISTS shakedown;
CREATE TABLE IF NOT EXISTS shakedown.txn_lists (k VARCHAR(64) NOT NULL PRIMARY KEY, v TEXT NOT NULL) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS shakedown.regs (k VARCHAR(64) NOT NULL PRIMARY KEY, v BIGINT, version BIGINT NOT NULL) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS shakedown.set_elems (k VARCHAR(64) NOT NULL, e BIGINT NOT NULL, PRIMARY KEY (k, e)) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS shakedown.marker (id INT NOT NULL PRIMARY KEY, v VARCHAR(64) NOT NULL) ENGINE=InnoDB;
CREATE USER IF NOT EXISTS 'shakedown'@'%';
GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER ON shakedown.* TO 'shakedown'@'%';
REPLACE INTO shakedown.marker VALUES (1, 'shakedown-ready');";

/// What the marker row holds once the schema exists.
pub(super) const READY_MARKER: &str = "shakedown-ready";

/// Wipe the node's directory and write its config, all owned by the server's user: `$1` = base
/// dir, `$2` = my.cnf text, `$3` = the Galera provider library (empty: none needed), `$4` = OS
/// user.
const WIPE_SCRIPT: &str = r#"set -e
dir="$1"; user="$4"
[ -z "$3" ] || [ -r "$3" ] || { echo "no Galera provider at $3 (apt-get install galera-4)"; exit 1; }
id "$user" >/dev/null 2>&1 || { echo "no OS user $user (apt-get install mariadb-server)"; exit 1; }
rm -rf "$dir/data" "$dir/error.log" "$dir/recover.log" "$dir/install.log" "$dir/mariadbd.pid" "$dir/server.pid" "$dir/mysqld.sock"
mkdir -p "$dir/data"
printf '%s\n' "$2" > "$dir/my.cnf"
touch "$dir/error.log"
chown -R "$user:" "$dir"
chmod 755 "$dir"
"#;

/// Create the system tables: `$1` = base dir, `$2` = OS user.
const INSTALL_DB_SCRIPT: &str = r#"set -e
dir="$1"
mariadb-install-db --no-defaults --datadir="$dir/data" --user="$2" --skip-test-db \
  --auth-root-authentication-method=socket >> "$dir/install.log" 2>&1 \
  || { echo "mariadb-install-db failed:"; tail -n 5 "$dir/install.log" | cut -c1-300; exit 1; }
"#;

/// Start the server unless our pidfile names a live mariadbd: `$1` = base dir, the rest = the
/// server command. A restart after a crash (`$2` = `recover`) first runs `--wsrep-recover` and
/// passes the recovered position on. The server leads its own session (`setsid`).
const START_SCRIPT: &str = concat!(
    crate::systems::strays::live_sh!(),
    crate::systems::strays::log_tail_sh!(),
    r#"set -e
dir="$1"; mode="$2"; shift 2
pid=$(cat "$dir/mariadbd.pid" 2>/dev/null || true)
if live "$pid" mariadbd; then exit 0; fi
# Never set up on this node (a heal before the first setup): nothing to start.
[ -f "$dir/my.cnf" ] || exit 0
cd "$dir"
extra=""
if [ "$mode" = recover ]; then
  rm -f "$dir/recover.log"
  "$@" --wsrep-recover --log-error="$dir/recover.log" > /dev/null 2>&1 < /dev/null || true
  pos=$(sed -n 's/.*WSREP: Recovered position: *\([^ ]*\).*/\1/p' "$dir/recover.log" 2>/dev/null | tail -n 1)
  [ -n "$pos" ] && extra="--wsrep-start-position=$pos"
fi
setsid "$@" $extra >> "$dir/error.log" 2>&1 < /dev/null &
echo $! > "$dir/mariadbd.pid"
"#
);

/// Readiness: `$1` = base dir, `$2` = cluster size. Prints what the node says when not ready.
const READY_SCRIPT: &str = concat!(
    crate::systems::strays::live_sh!(),
    crate::systems::strays::log_tail_sh!(),
    r#"dir="$1"; want="$2"
pid=$(cat "$dir/mariadbd.pid" 2>/dev/null || true)
if ! live "$pid" mariadbd; then
  log_tail "$dir/error.log" 8
  exit 3
fi
s=$(mariadb --no-defaults -S "$dir/mysqld.sock" -u root -N -B -e \
  "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state_comment','wsrep_cluster_size','wsrep_ready','wsrep_cluster_status')" 2>&1) \
  || { echo "not accepting connections on $dir/mysqld.sock: $s" | cut -c1-300; exit 1; }
state=$(printf '%s\n' "$s" | awk '$1=="wsrep_local_state_comment"{print $2}')
size=$(printf '%s\n' "$s" | awk '$1=="wsrep_cluster_size"{print $2}')
ready=$(printf '%s\n' "$s" | awk '$1=="wsrep_ready"{print $2}')
status=$(printf '%s\n' "$s" | awk '$1=="wsrep_cluster_status"{print $2}')
if [ "$state" = Synced ] && [ "$ready" = ON ] && [ "$size" = "$want" ] && [ "$status" = Primary ]; then exit 0; fi
echo "state ${state:-?}, ready ${ready:-?}, cluster ${status:-?} of size ${size:-?} (want Synced, ON, Primary of $want)"
exit 1
"#
);

/// Run SQL on the node's server through its socket as root: `$1` = base dir, `$2` = SQL.
pub(super) const SQL_SCRIPT: &str =
    r#"mariadb --no-defaults -S "$1/mysqld.sock" -u root -N -B -e "$2" 2>&1"#;

/// Wait until the first node holds the schema marker: `$1` = host, `$2` = port, `$3` =
/// seconds, `$4` = marker.
pub(super) const AWAIT_MARKER_SCRIPT: &str = r#"host="$1"; port="$2"; wait_s="$3"; marker="$4"
i=0
while :; do
  got=$(mariadb --no-defaults -h "$host" -P "$port" -u shakedown --connect-timeout=2 -N -B \
    -e "SELECT v FROM shakedown.marker WHERE id = 1" 2>&1)
  [ "$got" = "$marker" ] && exit 0
  i=$((i+1))
  if [ $i -gt $((wait_s*5)) ]; then echo "first node $host:$port not ready after ${wait_s} s: $got" | cut -c1-300; exit 1; fi
  sleep 0.2
done
"#;

impl MariaDb {
    /// A MariaDB system with the given settings.
    pub fn new(cfg: MariaDbConfig) -> MariaDb {
        MariaDb { cfg }
    }

    /// The node that bootstraps the cluster: the first.
    pub(super) fn is_bootstrap(node: &Node, cluster: &[Node]) -> bool {
        cluster.first().is_some_and(|n| n.name == node.name)
    }

    /// The node's `my.cnf` (everything in one `[mariadbd]` group; nothing else is read): the
    /// lines both topologies share, then the topology's own.
    pub fn my_cnf(&self, node: &Node, cluster: &[Node]) -> String {
        let c = &self.cfg;
        let dir = &c.base_dir;
        let host = &node.host;
        let mut lines = vec![
            "[mariadbd]".to_string(),
            format!("user={}", c.os_user),
            format!("datadir={dir}/data"),
            format!("socket={dir}/mysqld.sock"),
            format!("pid-file={dir}/server.pid"),
            format!("log-error={dir}/error.log"),
            format!("port={}", c.port),
            format!("bind-address={host}"),
            "skip-name-resolve".into(),
            "binlog_format=ROW".into(),
            "default_storage_engine=InnoDB".into(),
            "innodb_autoinc_lock_mode=2".into(),
            "innodb_buffer_pool_size=64M".into(),
            format!(
                "innodb_flush_log_at_trx_commit={}",
                c.flush_log_at_trx_commit
            ),
            format!(
                "innodb_snapshot_isolation={}",
                if c.snapshot_isolation { "ON" } else { "OFF" }
            ),
            "max_connections=300".into(),
        ];
        match c.topology {
            Topology::Galera => lines.extend(self.galera_cnf(node, cluster)),
            Topology::Replicated => lines.extend(super::replication::cnf(c, node, cluster)),
        }
        lines.join("\n")
    }

    /// Galera's lines of `my.cnf`.
    fn galera_cnf(&self, node: &Node, cluster: &[Node]) -> Vec<String> {
        let c = &self.cfg;
        let dir = &c.base_dir;
        let host = &node.host;
        let members: Vec<String> = cluster
            .iter()
            .map(|n| format!("{}:{}", n.host, c.galera_port))
            .collect();
        let mut lines = vec![
            "wsrep_on=ON".into(),
            format!("wsrep_provider={PROVIDER}"),
            "wsrep_cluster_name=shakedown".into(),
            format!("wsrep_cluster_address=gcomm://{}", members.join(",")),
            format!("wsrep_node_address={host}"),
            format!("wsrep_node_name={}", node.name),
            "wsrep_sst_method=rsync".into(),
            format!("wsrep_sst_receive_address={host}:{}", c.sst_port),
            format!("wsrep_sync_wait={}", c.wsrep_sync_wait),
            format!(
                "wsrep_provider_options=\"gmcast.listen_addr=tcp://{host}:{};ist.recv_addr={host}:{}\"",
                c.galera_port, c.ist_port
            ),
        ];
        if let Some(n) = c.sync_binlog {
            lines.push(format!("log_bin={dir}/data/binlog"));
            lines.push(format!("sync_binlog={n}"));
        }
        lines
    }

    /// The server command line (`--wsrep-new-cluster` on Galera's bootstrapping node at
    /// setup).
    pub(super) fn command(&self, bootstrap: bool) -> Vec<String> {
        let mut cmd = vec![
            "mariadbd".to_string(),
            format!("--defaults-file={}/my.cnf", self.cfg.base_dir),
        ];
        if bootstrap && self.cfg.topology == Topology::Galera {
            cmd.push("--wsrep-new-cluster".into());
        }
        cmd
    }

    /// The packages a node needs for this topology.
    fn packages_list(&self) -> &'static [&'static str] {
        match self.cfg.topology {
            Topology::Galera => &PACKAGES,
            Topology::Replicated => &PACKAGES[..1],
        }
    }

    pub(super) fn start_process(
        &self,
        remote: &dyn Remote,
        bootstrap: bool,
        recover: bool,
    ) -> Result<(), DbError> {
        let mode = if recover { "recover" } else { "fresh" };
        let mut args = vec![self.cfg.base_dir.clone(), mode.to_string()];
        args.extend(self.command(bootstrap));
        remote.exec_ok(
            &Cmd::script(START_SCRIPT, args)
                .sudo(true)
                .timeout_ms(self.cfg.ready_timeout_ms),
        )?;
        Ok(())
    }

    /// Block until `node` is Synced in a primary component of the whole cluster, or time out;
    /// fails at once with the error log's tail when the server process is gone.
    pub fn await_ready(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster_size: usize,
    ) -> Result<(), DbError> {
        let cmd = Cmd::script(
            READY_SCRIPT,
            [self.cfg.base_dir.clone(), cluster_size.to_string()],
        )
        .sudo(true);
        self.poll_ready(remote, node, &cmd, "galera node")
    }

    /// Run a readiness script until it exits 0 (ready), [`ready::NOT_RUNNING`] (an error with the
    /// error log's tail it printed) or the ready timeout passes (an error with what it printed
    /// last); `what` names the node's role in the error.
    pub(super) fn poll_ready(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cmd: &Cmd,
        what: &str,
    ) -> Result<(), DbError> {
        let how = ready::Readiness {
            server: "mariadbd",
            what: what.into(),
            timeout_ms: self.cfg.ready_timeout_ms,
            interval_ms: 250,
            exited: ready::trimmed,
        };
        ready::poll(remote, node, cmd, &how)
    }

    pub(super) fn sql(
        &self,
        remote: &dyn Remote,
        node: &Node,
        sql: &str,
    ) -> Result<String, DbError> {
        let out =
            remote.exec(&Cmd::script(SQL_SCRIPT, [self.cfg.base_dir.as_str(), sql]).sudo(true))?;
        if !out.success() {
            return Err(DbError::Other {
                node: node.name.clone(),
                message: format!("SQL failed: {}", out.stdout.trim()),
            });
        }
        Ok(out.stdout)
    }

    fn setup_bootstrap(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError> {
        self.start_process(remote, true, false)?;
        self.await_ready(remote, node, 1)?;
        self.sql(remote, node, SCHEMA_SQL)?;
        Ok(())
    }

    fn setup_joiner(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        self.await_schema_on_first(remote, node, cluster, "bootstrap the cluster")?;
        self.start_process(remote, false, false)
    }

    /// Wait until the first node serves the schema marker to the client user; `why` says in
    /// the error what the first node was waited for.
    pub(super) fn await_schema_on_first(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
        why: &str,
    ) -> Result<(), DbError> {
        let first = cluster.first().ok_or_else(|| DbError::Other {
            node: node.name.clone(),
            message: "no nodes in the cluster".into(),
        })?;
        let wait_s = (self.cfg.ready_timeout_ms / 1000).max(1);
        let out = remote.exec(
            &Cmd::script(
                AWAIT_MARKER_SCRIPT,
                [
                    first.host.clone(),
                    self.cfg.port.to_string(),
                    wait_s.to_string(),
                    READY_MARKER.to_string(),
                ],
            )
            .timeout_ms(self.cfg.ready_timeout_ms + 30_000),
        )?;
        if !out.success() {
            return Err(DbError::Other {
                node: node.name.clone(),
                message: format!(
                    "waiting for {} to {why}: {} {}",
                    first.name,
                    out.stdout.trim(),
                    out.stderr.trim()
                ),
            });
        }
        Ok(())
    }
}

impl Abilities for MariaDb {
    fn name(&self) -> &str {
        self.cfg.topology.db_name()
    }
    fn data_dir(&self) -> Option<String> {
        Some(self.data_path())
    }
    /// InnoDB's redo log and system tablespace, the test schema's tables, and Galera's
    /// write-set cache (Galera) or the binary and relay logs (asynchronous replication).
    fn data_files(&self) -> Vec<String> {
        let last = match self.cfg.topology {
            Topology::Galera => &["galera.cache"][..],
            Topology::Replicated => &["binlog.0*", "relay.0*"][..],
        };
        ["ib_logfile*", "ibdata1", "shakedown/*.ibd"]
            .iter()
            .chain(last)
            .map(|s| s.to_string())
            .collect()
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
    fn as_primaries(&self) -> Option<&dyn crate::db::Primaries> {
        (self.cfg.topology == Topology::Replicated).then_some(self as _)
    }
}

impl Db for MariaDb {
    fn packages(&self) -> Vec<String> {
        self.packages_list().iter().map(|p| p.to_string()).collect()
    }

    fn setup(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError> {
        // A layer an earlier run left mounted (stale or not) goes before the wipe.
        self.stop(remote)?;
        remote.exec_ok(
            &Cmd::script(
                WIPE_SCRIPT,
                [
                    self.cfg.base_dir.clone(),
                    self.my_cnf(node, cluster),
                    match self.cfg.topology {
                        Topology::Galera => PROVIDER.to_string(),
                        Topology::Replicated => String::new(),
                    },
                    self.cfg.os_user.clone(),
                ],
            )
            .sudo(true),
        )?;
        self.mount_layer(remote, true)?;
        remote.exec_ok(
            &Cmd::script(
                INSTALL_DB_SCRIPT,
                [self.cfg.base_dir.as_str(), self.cfg.os_user.as_str()],
            )
            .sudo(true)
            .timeout_ms(self.cfg.ready_timeout_ms),
        )?;
        match (self.cfg.topology, Self::is_bootstrap(node, cluster)) {
            (Topology::Galera, true) => self.setup_bootstrap(remote, node),
            (Topology::Galera, false) => self.setup_joiner(remote, node, cluster),
            (Topology::Replicated, true) => self.setup_primary(remote, node),
            (Topology::Replicated, false) => self.setup_replica(remote, node, cluster),
        }
    }

    fn teardown(&self, remote: &dyn Remote, _node: &Node) -> Result<(), DbError> {
        self.stop(remote)
    }

    fn log_files(&self, _node: &Node) -> Vec<String> {
        vec![
            format!("{}/error.log", self.cfg.base_dir),
            format!("{}/recover.log", self.cfg.base_dir),
        ]
    }

    fn version(&self, remote: &dyn Remote) -> Option<String> {
        let out = remote
            .exec_ok(&Cmd::new("mariadbd").arg("--version"))
            .ok()?;
        out.lines().next().map(|l| l.trim().to_string())
    }

    fn required_binaries(&self) -> Vec<Binary> {
        let fix = format!(
            "apt-get install {} (`shakedown run --db {}` does this unless --no-install)",
            self.packages_list().join(" "),
            self.cfg.topology.db_name()
        );
        // The provider library (not a program) is checked by setup's wipe script.
        let programs = match self.cfg.topology {
            Topology::Galera => &["mariadbd", "mariadb-install-db", "mariadb", "rsync"][..],
            Topology::Replicated => &["mariadbd", "mariadb-install-db", "mariadb"][..],
        };
        programs
            .iter()
            .map(|name| Binary {
                name: name.to_string(),
                paths: vec![format!("/usr/sbin/{name}"), format!("/usr/bin/{name}")],
                fix: fix.clone(),
            })
            .collect()
    }
}

impl Lifecycle for MariaDb {
    fn layout(&self) -> Layout {
        Layout::new(&self.cfg.base_dir, "mariadbd", "mariadbd", EXE_PATTERN)
            .sudo()
            .owned_by(&self.cfg.os_user)
    }
    /// Galera: `--wsrep-recover` finds the last committed position and the node rejoins with
    /// it (incremental transfer when a donor still has the writes); never bootstraps: after
    /// every node was killed, the nodes started together re-form the cluster. Asynchronous
    /// replication: a plain restart; a replica resumes replicating from its saved GTID position
    /// by itself.
    fn restart(&self, remote: &dyn Remote, _node: &Node, _cluster: &[Node]) -> Result<(), DbError> {
        self.start_process(remote, false, self.cfg.topology == Topology::Galera)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(k: usize) -> Vec<Node> {
        (1..=k)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.103.0.{i}"),
            })
            .collect()
    }

    #[test]
    fn my_cnf_binds_every_listener_to_the_node_and_lists_the_members() {
        let cluster = nodes(3);
        let g = MariaDb::new(MariaDbConfig {
            flush_log_at_trx_commit: 2,
            wsrep_sync_wait: 1,
            ..Default::default()
        });
        let cnf = g.my_cnf(&cluster[1], &cluster);
        for want in [
            "[mariadbd]",
            "bind-address=10.103.0.2",
            "datadir=/tmp/shakedown/mariadb/data",
            "socket=/tmp/shakedown/mariadb/mysqld.sock",
            "skip-name-resolve",
            "binlog_format=ROW",
            "innodb_autoinc_lock_mode=2",
            "innodb_flush_log_at_trx_commit=2",
            "wsrep_sync_wait=1",
            "wsrep_provider=/usr/lib/galera/libgalera_smm.so",
            "wsrep_cluster_address=gcomm://10.103.0.1:4567,10.103.0.2:4567,10.103.0.3:4567",
            "wsrep_node_address=10.103.0.2",
            "wsrep_node_name=n2",
            "wsrep_sst_method=rsync",
            "wsrep_sst_receive_address=10.103.0.2:4444",
            "gmcast.listen_addr=tcp://10.103.0.2:4567;ist.recv_addr=10.103.0.2:4568",
        ] {
            assert!(
                cnf.lines().any(|l| l.contains(want)),
                "{want} not in\n{cnf}"
            );
        }
        assert!(!cnf.contains("log_bin"), "no binary log unless sync_binlog");
        let g = MariaDb::new(MariaDbConfig {
            sync_binlog: Some(1),
            ..Default::default()
        });
        let cnf = g.my_cnf(&cluster[0], &cluster);
        assert!(
            cnf.contains("sync_binlog=1") && cnf.contains("log_bin="),
            "{cnf}"
        );
        assert!(MariaDb::is_bootstrap(&cluster[0], &cluster));
        assert!(!MariaDb::is_bootstrap(&cluster[2], &cluster));
        assert_eq!(
            g.command(true),
            [
                "mariadbd",
                "--defaults-file=/tmp/shakedown/mariadb/my.cnf",
                "--wsrep-new-cluster"
            ]
        );
    }
}
