//! PostgreSQL 15 as a system under test: one primary and streaming replicas, started as daemons
//! with pidfiles, readiness checks that fail fast with the log tail, kill -9 / restart, pause /
//! resume, wipe, logs.
//!
//! Layout on a node (all under `base_dir`, default `/tmp/shakedown/postgres`, which is private per
//! sandbox node; the nodes share the rest of the host's filesystem, so nothing lives elsewhere):
//! `data/` (the cluster, wiped by `setup`), `postgres.log` (the server's stderr), `postgres.pid`
//! (our pidfile: the postmaster) and the Unix socket. The first
//! node of the cluster (or `primary`) runs `initdb` and becomes the primary; every other node waits
//! for it, copies it with `pg_basebackup -R` (run on the replica, over the network from the
//! primary), and streams from it as a hot standby whose `application_name` (via `cluster_name`) is
//! its node name. PostgreSQL refuses to run as root, so every server command runs as `os_user`
//! (`postgres`) through `runuser`/`setpriv`. Binaries come from `bin_dir` (Debian's
//! `postgresql-15`, installed with apt-get when missing). Authentication is `trust` for `samenet`
//! (every subnet the node is directly attached to: the cluster and, in the sandbox, the
//! controller's bridge address). Settings are passed as `-c` flags, so they are visible in the
//! process list and test.json (`fsync` too: `--pg-fsync off` is the unsafe setting). With the
//! `power-loss` or a `disk` fault, `data/` (all of PGDATA, WAL included) is served from the
//! lose-unsynced layer (`nemesis::power`): mounted after the wipe, before initdb or the base
//! backup, handed to `os_user` with mode 0700, unmounted at teardown; the primary's setup ends
//! with a `CHECKPOINT` and an fsync of every file, so a power loss never reaches back into the
//! schema (with `fsync=off` the server never syncs anything itself). A restart after a power
//! loss is crash recovery (a `postmaster.pid` emptied by the loss is removed first). Does not
//! own the client protocol or the schema's use (that is `client`); it only runs `init_sql` on
//! the primary once it is up.

use crate::control::{Cmd, Remote};
use crate::db::Abilities;
use crate::db::{Binary, Db, DbError, Kill, Pause, Primaries, Promote};
use crate::node::Node;
use crate::systems::lifecycle::{Layout, Lifecycle};
use crate::systems::ready;
use serde::{Deserialize, Serialize};

/// `synchronous_commit`: how long a commit waits before it is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SynchronousCommit {
    /// Acknowledge before even the local WAL flush.
    Off,
    /// Wait for the local WAL flush only.
    Local,
    /// Wait for the local flush and, with synchronous standbys, their flush (PostgreSQL default).
    #[default]
    On,
    /// Wait until synchronous standbys have written (not flushed) the WAL.
    RemoteWrite,
    /// Wait until synchronous standbys have applied the commit (visible to their readers).
    RemoteApply,
}

impl SynchronousCommit {
    /// The setting's value as PostgreSQL spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            SynchronousCommit::Off => "off",
            SynchronousCommit::Local => "local",
            SynchronousCommit::On => "on",
            SynchronousCommit::RemoteWrite => "remote_write",
            SynchronousCommit::RemoteApply => "remote_apply",
        }
    }

    /// True for the levels that wait for a standby's write or apply.
    pub fn is_remote(self) -> bool {
        matches!(
            self,
            SynchronousCommit::RemoteWrite | SynchronousCommit::RemoteApply
        )
    }
}

impl std::fmt::Display for SynchronousCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How to run PostgreSQL on the nodes. Fields missing from a recorded config (an older
/// test.json) take their defaults.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct PostgresConfig {
    /// Directory on each node holding data, log, pidfile and socket.
    pub base_dir: String,
    /// Directory of `postgres`, `initdb`, `pg_basebackup`, `pg_isready`, `psql`.
    pub bin_dir: String,
    /// OS user the server runs as (PostgreSQL refuses root).
    pub os_user: String,
    /// TCP port on every node.
    pub port: u16,
    /// Name of the primary node; `None` = the first node of the cluster.
    pub primary: Option<String>,
    /// `synchronous_commit` on every node.
    pub synchronous_commit: SynchronousCommit,
    /// `synchronous_standby_names`; `None` = `FIRST 1 (<second node>)` when `synchronous_commit`
    /// is remote_write or remote_apply, else empty (asynchronous replication).
    pub synchronous_standby_names: Option<String>,
    /// SQL run on the primary once after it started (the workload's schema).
    pub init_sql: String,
    /// How long setup and readiness may wait (primary up, base backup, streaming).
    pub ready_timeout_ms: u64,
    /// Isolation level of the txn workload's transactions (`--isolation`); `None` = not given
    /// (serializable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<super::txn::Isolation>,
    /// PostgreSQL's `fsync` (`--pg-fsync`): off = the server never asks the kernel to make its
    /// WAL or data files durable (acknowledged commits can vanish on a power loss).
    pub fsync: bool,
    /// The `shakedown` binary that serves `data/` from the lose-unsynced layer on the nodes (a
    /// run with the `power-loss` or a `disk` fault); `None`: a plain directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lazyfs: Option<String>,
}

impl Default for PostgresConfig {
    fn default() -> Self {
        PostgresConfig {
            base_dir: "/tmp/shakedown/postgres".into(),
            bin_dir: "/usr/lib/postgresql/15/bin".into(),
            os_user: "postgres".into(),
            port: 5432,
            primary: None,
            synchronous_commit: SynchronousCommit::On,
            synchronous_standby_names: None,
            init_sql: super::client::SCHEMA_SQL.into(),
            ready_timeout_ms: 60_000,
            isolation: None,
            fsync: true,
            lazyfs: None,
        }
    }
}

/// The node promoted by a failover, shared by every clone of a [`Postgres`] and by its clients
/// (`None` until a promote: the configured primary).
pub type PrimarySlot = std::sync::Arc<std::sync::Mutex<Option<String>>>;

/// The PostgreSQL primary/replica system.
#[derive(Debug, Clone, Default)]
pub struct Postgres {
    /// Settings.
    pub cfg: PostgresConfig,
    /// The promoted primary, if a failover happened (shared by clones).
    pub promoted: PrimarySlot,
}

/// Debian's PostgreSQL 15. The package creates and (with an init system) starts a `15/main`
/// cluster on localhost:5432; ours listen on the node address with their own socket directory,
/// so the two never meet.
const PACKAGES: [&str; 1] = ["postgresql-15"];

/// Wipe the node's directory and recreate it owned by the server user: `$1` = base dir,
/// `$2` = OS user.
const WIPE_SCRIPT: &str = r#"set -e
dir="$1"; user="$2"
id "$user" >/dev/null 2>&1 || { echo "no OS user $user (install postgresql-15)"; exit 1; }
rm -rf "$dir/data" "$dir/postgres.log" "$dir/postgres.pid"
mkdir -p "$dir"
chown "$user:" "$dir"
chmod 755 "$dir"
"#;

/// Make every file under `$1` durable on the lose-unsynced layer (`sync FILE` fsyncs each): the
/// end of setup, after a `CHECKPOINT`, so a power loss never reaches back into initdb and the
/// schema — with `fsync=off` the server itself never syncs.
const SYNC_ALL_SCRIPT: &str = r#"find "$1" -type f -exec sync {} +"#;

/// initdb as the server user and open pg_hba to the attached subnets: `$1` = base dir,
/// `$2` = bin dir, `$3` = OS user.
const INITDB_SCRIPT: &str = r#"set -e
dir="$1"; bin="$2"; user="$3"
runuser -u "$user" -- "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C \
  >> "$dir/postgres.log" 2>&1 || { echo "initdb failed:"; tail -n 5 "$dir/postgres.log"; exit 1; }
printf '%s\n' 'host all all samenet trust' 'host replication all samenet trust' \
  >> "$dir/data/pg_hba.conf"
"#;

/// Wait for the primary to be ready (init SQL done), then copy it: `$1` = base dir, `$2` = bin
/// dir, `$3` = OS user, `$4` = primary host, `$5` = port, `$6` = application name, `$7` = seconds
/// to wait for the primary, `$8` = the primary's readiness marker.
const BASEBACKUP_SCRIPT: &str = r#"dir="$1"; bin="$2"; user="$3"; host="$4"; port="$5"; app="$6"; wait_s="$7"; marker="$8"
i=0
while :; do
  got=$("$bin/psql" -X -q -h "$host" -p "$port" -U postgres -d postgres -Atc \
    "select shobj_description(oid, 'pg_database') from pg_database where datname = 'postgres'" 2>&1)
  [ "$got" = "$marker" ] && break
  i=$((i+1))
  if [ $i -gt $((wait_s*5)) ]; then echo "primary $host:$port not ready after ${wait_s} s: $got" | cut -c1-300; exit 1; fi
  sleep 0.2
done
runuser -u "$user" -- "$bin/pg_basebackup" -D "$dir/data" -R -X stream -c fast \
  -d "host=$host port=$port user=postgres application_name=$app" >> "$dir/postgres.log" 2>&1 \
  || { echo "pg_basebackup from $host:$port failed:"; tail -n 5 "$dir/postgres.log" | cut -c1-300; exit 1; }
"#;

/// The file name of the server's executable (postmaster and backends), for
/// [`crate::systems::strays::sweep`].
const EXE_PATTERN: &str = "^postgres( |$)";

/// Start the server unless the pidfile names a live postgres: `$1` = base dir, `$2` = OS user,
/// `$3` = how many times to try, the rest = the server command. The server is the leader of its
/// own session and process group (`setsid`, then `setpriv` execs it as the user). With more than
/// one try, a server that exits within a second because its System V shared-memory key was
/// being probed by another server ("pre-existing shared memory block … is still in use") is
/// started again: on the lose-unsynced layer every node's data directory has inode 1, the key
/// PostgreSQL derives from it is the same on every node, and in the sandbox the nodes share one
/// IPC namespace, so servers starting together (a power-on) look at each other's segments.
const START_SCRIPT: &str = concat!(
    crate::systems::strays::live_sh!(),
    r#"set -e
dir="$1"; user="$2"; tries="$3"; shift 3
pid=$(cat "$dir/postgres.pid" 2>/dev/null || true)
if live "$pid" postgres; then exit 0; fi
n=0
while :; do
  # A postmaster.pid left by kill -9 whose PID now names another process would block the start;
  # so would an empty one (a power loss dropped its unsynced contents: "lock file is empty").
  old=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null || true)
  if [ -z "$old" ] || ! grep -q postgres "/proc/$old/cmdline" 2>/dev/null; then rm -f "$dir/data/postmaster.pid"; fi
  cd "$dir"
  lines=$(wc -l < "$dir/postgres.log" 2>/dev/null || echo 0)
  setsid setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups -- "$@" \
    >> "$dir/postgres.log" 2>&1 < /dev/null &
  pid=$!
  echo "$pid" > "$dir/postgres.pid"
  n=$((n+1))
  [ "$n" -lt "$tries" ] || exit 0
  i=0
  while [ $i -lt 10 ] && live "$pid" postgres; do sleep 0.1; i=$((i+1)); done
  live "$pid" postgres && exit 0
  tail -n +$((lines+1)) "$dir/postgres.log" 2>/dev/null | grep -q 'pre-existing shared memory block' || exit 0
  sleep "0.$((n*2))"
done
"#
);

/// Readiness probe that fails fast when the server died: `$1` = base dir, `$2` = bin dir,
/// `$3` = host, `$4` = port, `$5` = `primary` or `replica`. Replicas must be streaming.
const READY_SCRIPT: &str = concat!(
    crate::systems::strays::live_sh!(),
    crate::systems::strays::log_tail_sh!(),
    r#"dir="$1"; bin="$2"; host="$3"; port="$4"; role="$5"
pid=$(cat "$dir/postgres.pid" 2>/dev/null || true)
if ! live "$pid" postgres; then
  log_tail "$dir/postgres.log" 5
  exit 3
fi
"$bin/pg_isready" -q -h "$host" -p "$port" -U postgres || { echo "not accepting connections on $host:$port"; exit 1; }
[ "$role" = replica ] || exit 0
s=$("$bin/psql" -X -q -h "$host" -p "$port" -U postgres -d postgres -Atc "select status from pg_stat_wal_receiver" 2>&1) || { echo "$s" | cut -c1-300; exit 1; }
[ "$s" = streaming ] || { echo "WAL receiver: ${s:-not running}"; exit 1; }
"#
);

/// What the primary writes as the `postgres` database's comment once `init_sql` ran; replicas
/// copy it only after seeing it.
const READY_MARKER: &str = "shakedown-ready";

impl Postgres {
    /// A PostgreSQL system with the given settings.
    pub fn new(cfg: PostgresConfig) -> Postgres {
        Postgres {
            cfg,
            promoted: PrimarySlot::default(),
        }
    }

    fn bin(&self, name: &str) -> String {
        format!("{}/{name}", self.cfg.bin_dir)
    }

    /// The primary of `cluster`: the promoted node after a failover, else the configured name,
    /// else the first node.
    pub fn primary<'a>(&self, cluster: &'a [Node]) -> Option<&'a Node> {
        let promoted = self
            .promoted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(name) = promoted {
            return cluster.iter().find(|n| n.name == name);
        }
        match &self.cfg.primary {
            Some(name) => cluster.iter().find(|n| &n.name == name),
            None => cluster.first(),
        }
    }

    fn is_primary(&self, node: &Node, cluster: &[Node]) -> bool {
        self.primary(cluster).is_some_and(|p| p.name == node.name)
    }

    /// `synchronous_standby_names` in effect: the configured value, else `FIRST 1 (<second
    /// node>)` for remote_write/remote_apply, else empty.
    pub fn standby_names(&self, cluster: &[Node]) -> String {
        if let Some(s) = &self.cfg.synchronous_standby_names {
            return s.clone();
        }
        if !self.cfg.synchronous_commit.is_remote() {
            return String::new();
        }
        let primary = self.primary(cluster).map(|p| p.name.clone());
        cluster
            .iter()
            .find(|n| Some(&n.name) != primary.as_ref())
            .map(|n| format!("FIRST 1 ({})", n.name))
            .unwrap_or_default()
    }

    /// The server command line for a node.
    pub fn command(&self, node: &Node, cluster: &[Node]) -> Vec<String> {
        let dir = &self.cfg.base_dir;
        let settings = [
            format!("listen_addresses={}", node.host),
            format!("port={}", self.cfg.port),
            format!("unix_socket_directories={dir}"),
            "wal_level=replica".into(),
            "max_wal_senders=16".into(),
            "wal_keep_size=512MB".into(),
            "hot_standby=on".into(),
            "max_connections=300".into(),
            "shared_buffers=32MB".into(),
            format!("synchronous_commit={}", self.cfg.synchronous_commit),
            format!("fsync={}", if self.cfg.fsync { "on" } else { "off" }),
            format!("synchronous_standby_names={}", self.standby_names(cluster)),
            format!("cluster_name={}", node.name),
            "log_line_prefix=%m [%p] %a ".into(),
        ];
        let mut cmd = vec![self.bin("postgres"), "-D".into(), format!("{dir}/data")];
        for s in settings {
            cmd.push("-c".into());
            cmd.push(s);
        }
        cmd
    }

    fn start_process(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        let tries = if self.data_layer().is_some() { 5 } else { 1 };
        let mut args = vec![
            self.cfg.base_dir.clone(),
            self.cfg.os_user.clone(),
            tries.to_string(),
        ];
        args.extend(self.command(node, cluster));
        remote.exec_ok(&Cmd::script(START_SCRIPT, args).sudo(true))?;
        Ok(())
    }

    fn psql(&self, node: &Node, sql: &str) -> Cmd {
        Cmd::new(self.bin("psql")).args([
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            &node.host,
            "-p",
            &self.cfg.port.to_string(),
            "-U",
            "postgres",
            "-d",
            "postgres",
            "-c",
            sql,
        ])
    }

    /// Block until `node` accepts connections (and, on a replica, streams from the primary), or
    /// time out; fails at once with the log tail when the server process is gone.
    pub fn await_ready(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        let role = if self.is_primary(node, cluster) {
            "primary"
        } else {
            "replica"
        };
        let cmd = Cmd::script(
            READY_SCRIPT,
            [
                self.cfg.base_dir.clone(),
                self.cfg.bin_dir.clone(),
                node.host.clone(),
                self.cfg.port.to_string(),
                role.to_string(),
            ],
        );
        let how = ready::Readiness {
            server: "postgres",
            what: format!("postgres {role}"),
            timeout_ms: self.cfg.ready_timeout_ms,
            interval_ms: 200,
            exited: ready::trimmed,
        };
        ready::poll(remote, node, &cmd, &how)
    }

    fn setup_primary(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        remote.exec_ok(
            &Cmd::script(
                INITDB_SCRIPT,
                [
                    self.cfg.base_dir.as_str(),
                    self.cfg.bin_dir.as_str(),
                    self.cfg.os_user.as_str(),
                ],
            )
            .sudo(true),
        )?;
        self.start_process(remote, node, cluster)?;
        self.await_ready(remote, node, cluster)?;
        let init = format!(
            // Local commit: the synchronous standbys do not exist yet. The checkpoint writes the
            // schema to the data files (made durable below on the layer).
            "SET synchronous_commit = local;\n{}\nCHECKPOINT;\nCOMMENT ON DATABASE postgres IS '{READY_MARKER}';",
            self.cfg.init_sql
        );
        let out = remote.exec(&self.psql(node, &init))?;
        if !out.success() {
            return Err(DbError::Other {
                node: node.name.clone(),
                message: format!("init SQL failed: {}", out.stderr.trim()),
            });
        }
        if self.data_layer().is_some() {
            remote.exec_ok(&Cmd::script(SYNC_ALL_SCRIPT, [self.data_path()]).sudo(true))?;
        }
        Ok(())
    }

    fn setup_replica(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        let primary = self.primary(cluster).ok_or_else(|| DbError::Other {
            node: node.name.clone(),
            message: "no primary in the cluster".into(),
        })?;
        let out = remote.exec(
            &Cmd::script(
                BASEBACKUP_SCRIPT,
                [
                    self.cfg.base_dir.clone(),
                    self.cfg.bin_dir.clone(),
                    self.cfg.os_user.clone(),
                    primary.host.clone(),
                    self.cfg.port.to_string(),
                    node.name.clone(),
                    (self.cfg.ready_timeout_ms / 1000).max(1).to_string(),
                    READY_MARKER.to_string(),
                ],
            )
            .sudo(true)
            .timeout_ms(self.cfg.ready_timeout_ms + 30_000),
        )?;
        if !out.success() {
            return Err(DbError::Other {
                node: node.name.clone(),
                message: format!(
                    "making a replica of {}: {} {}",
                    primary.name,
                    out.stdout.trim(),
                    out.stderr.trim()
                ),
            });
        }
        self.start_process(remote, node, cluster)
    }
}

impl Abilities for Postgres {
    fn name(&self) -> &str {
        "postgres"
    }
    fn data_dir(&self) -> Option<String> {
        Some(self.data_path())
    }
    /// The WAL segments and the heap and index files of every database (the test tables live
    /// in `postgres`, under `base/<its OID>/`).
    fn data_files(&self) -> Vec<String> {
        ["pg_wal/0*", "base/*/[0-9]*"].map(String::from).to_vec()
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

impl Db for Postgres {
    fn packages(&self) -> Vec<String> {
        PACKAGES.iter().map(|p| p.to_string()).collect()
    }

    fn setup(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError> {
        // Kill anything left from a previous run; a layer an earlier run left mounted (stale or
        // not) goes before the wipe.
        self.stop(remote)?;
        remote.exec_ok(
            &Cmd::script(
                WIPE_SCRIPT,
                [self.cfg.base_dir.as_str(), self.cfg.os_user.as_str()],
            )
            .sudo(true),
        )?;
        // All of PGDATA, WAL included, on the layer: mounted before initdb / the base backup.
        self.mount_layer(remote, true)?;
        if self.is_primary(node, cluster) {
            self.setup_primary(remote, node, cluster)
        } else {
            self.setup_replica(remote, node, cluster)
        }
    }

    fn teardown(&self, remote: &dyn Remote, _node: &Node) -> Result<(), DbError> {
        self.stop(remote)
    }

    fn log_files(&self, _node: &Node) -> Vec<String> {
        vec![format!("{}/postgres.log", self.cfg.base_dir)]
    }

    fn version(&self, remote: &dyn Remote) -> Option<String> {
        let out = remote
            .exec_ok(&Cmd::new(self.bin("postgres")).arg("--version"))
            .ok()?;
        out.lines().next().map(|l| l.trim().to_string())
    }

    fn required_binaries(&self) -> Vec<Binary> {
        let fix = format!(
            "apt-get install {} (`shakedown run --db postgres` does this unless --no-install)",
            PACKAGES.join(" ")
        );
        [
            "postgres",
            "initdb",
            "pg_basebackup",
            "psql",
            "pg_isready",
            "pg_ctl",
        ]
        .into_iter()
        .map(|name| Binary {
            name: name.into(),
            paths: vec![self.bin(name)],
            fix: fix.clone(),
        })
        .collect()
    }
}

impl Lifecycle for Postgres {
    fn layout(&self) -> Layout {
        Layout::new(&self.cfg.base_dir, "postgres", "postgres", EXE_PATTERN)
            .sudo()
            .owned_by(&self.cfg.os_user)
    }
    /// The primary runs crash recovery, a replica resumes streaming (its `standby.signal` and
    /// `primary_conninfo` survive).
    fn restart(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError> {
        self.start_process(remote, node, cluster)
    }
}

/// Whether the server on this node is a primary: `f` (not in recovery), `t` (a standby), or an
/// error when it does not answer within 2 s (down, paused, cut off). `$1` = bin dir, `$2` =
/// host, `$3` = port.
const IN_RECOVERY_SCRIPT: &str = r#""$1/psql" -X -q -At -h "$2" -p "$3" -U postgres \
  -d "dbname=postgres connect_timeout=2" -c "select pg_is_in_recovery()"
"#;

impl Primaries for Postgres {
    /// The nodes whose server answers that it is not in recovery, asked of every node: after a
    /// promote while the old primary still runs (a partition), both.
    fn primaries(
        &self,
        remotes: &[std::sync::Arc<dyn Remote>],
        nodes: &[Node],
    ) -> Result<Vec<String>, DbError> {
        let mut found = Vec::new();
        let mut errors = Vec::new();
        for (remote, node) in remotes.iter().zip(nodes) {
            let cmd = Cmd::script(
                IN_RECOVERY_SCRIPT,
                [
                    self.cfg.bin_dir.clone(),
                    node.host.clone(),
                    self.cfg.port.to_string(),
                ],
            )
            .timeout_ms(5_000);
            match remote.exec_ok(&cmd) {
                Ok(out) if out.trim() == "f" => found.push(node.name.clone()),
                Ok(_) => {}
                Err(e) => errors.push(format!("{}: {e}", node.name)),
            }
        }
        if found.is_empty() {
            return Err(DbError::Other {
                node: nodes.first().map(|n| n.name.clone()).unwrap_or_default(),
                message: format!(
                    "no PostgreSQL server said it is a primary{}",
                    if errors.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", errors.join("; "))
                    }
                ),
            });
        }
        Ok(found)
    }
}

/// `pg_ctl promote` on a replica, waiting until it accepts writes: `$1` = bin dir, `$2` = base
/// dir, `$3` = OS user.
const PROMOTE_SCRIPT: &str = r#"set -e
runuser -u "$3" -- "$1/pg_ctl" promote -D "$2/data" -w -t 30 >/dev/null
"#;

impl Promote for Postgres {
    fn candidates(&self, cluster: &[Node]) -> Vec<String> {
        let primary = self.primary(cluster).map(|p| p.name.clone());
        cluster
            .iter()
            .filter(|n| Some(&n.name) != primary.as_ref())
            .map(|n| n.name.clone())
            .collect()
    }

    fn promote(&self, remote: &dyn Remote, node: &Node, cluster: &[Node]) -> Result<(), DbError> {
        if !self.candidates(cluster).contains(&node.name) {
            return Err(DbError::Other {
                node: node.name.clone(),
                message: "not a replica: cannot promote the primary".into(),
            });
        }
        remote.exec_ok(
            &Cmd::script(
                PROMOTE_SCRIPT,
                [
                    self.cfg.bin_dir.as_str(),
                    self.cfg.base_dir.as_str(),
                    self.cfg.os_user.as_str(),
                ],
            )
            .sudo(true),
        )?;
        *self.promoted.lock().unwrap_or_else(|p| p.into_inner()) = Some(node.name.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doctor_checks_the_programs_setup_runs_from_bin_dir() {
        let pg = Postgres::new(PostgresConfig {
            bin_dir: "/opt/pg/bin".into(),
            ..Default::default()
        });
        let bins = pg.required_binaries();
        let names: Vec<&str> = bins.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "postgres",
                "initdb",
                "pg_basebackup",
                "psql",
                "pg_isready",
                "pg_ctl"
            ]
        );
        assert!(
            bins.iter()
                .all(|b| b.paths == [format!("/opt/pg/bin/{}", b.name)])
        );
        assert!(bins[0].fix.contains("postgresql-15"));
    }

    fn nodes(k: usize) -> Vec<Node> {
        (1..=k)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.81.0.{i}"),
            })
            .collect()
    }

    #[test]
    fn standby_names_default_to_the_first_replica_only_for_remote_levels() {
        let cluster = nodes(3);
        let mut pg = Postgres::default();
        assert_eq!(pg.standby_names(&cluster), "");
        pg.cfg.synchronous_commit = SynchronousCommit::RemoteApply;
        assert_eq!(pg.standby_names(&cluster), "FIRST 1 (n2)");
        pg.cfg.primary = Some("n2".into());
        assert_eq!(pg.standby_names(&cluster), "FIRST 1 (n1)");
        pg.cfg.synchronous_standby_names = Some("ANY 2 (*)".into());
        assert_eq!(pg.standby_names(&cluster), "ANY 2 (*)");
        assert_eq!(pg.standby_names(&nodes(1)), "ANY 2 (*)");
        pg.cfg.synchronous_standby_names = None;
        pg.cfg.primary = None;
        assert_eq!(pg.standby_names(&nodes(1)), "");
    }

    #[test]
    fn command_binds_to_the_node_and_names_it() {
        let cluster = nodes(3);
        let pg = Postgres::new(PostgresConfig {
            synchronous_commit: SynchronousCommit::Off,
            ..Default::default()
        });
        let cmd = pg.command(&cluster[2], &cluster);
        assert_eq!(cmd[0], "/usr/lib/postgresql/15/bin/postgres");
        assert!(cmd.contains(&"listen_addresses=10.81.0.3".to_string()));
        assert!(cmd.contains(&"cluster_name=n3".to_string()));
        assert!(cmd.contains(&"synchronous_commit=off".to_string()));
        assert!(cmd.contains(&"unix_socket_directories=/tmp/shakedown/postgres".to_string()));
        // Every setting is one argument after its own -c.
        let settings = cmd.iter().filter(|a| *a == "-c").count();
        assert_eq!(settings, (cmd.len() - 3) / 2);
        assert!(pg.is_primary(&cluster[0], &cluster));
        assert!(!pg.is_primary(&cluster[2], &cluster));
    }
}
