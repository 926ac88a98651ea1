//! The two MariaDB topologies ([`Topology`]) and what `--db mariadb` (a primary with
//! asynchronous GTID replicas) does differently from Galera: its `my.cnf` lines, setting up the
//! primary and the replicas, readiness, and who the primary is.
//!
//! The first node is the primary, the others replicas; every node has `server_id` = its place
//! in the cluster, the binary log (`log_bin`, `binlog_format=ROW`, `log_slave_updates`) and
//! `gtid_strict_mode`. Replicas run with `read_only=1`: the client user's privileges are on the
//! `shakedown` database only (no `SUPER`, no `READ_ONLY ADMIN`, see `db::SCHEMA_SQL`), so a
//! write sent to a replica is refused with error 1290; the replication applier is not bound by
//! `read_only`. `slave_net_timeout=5` (heartbeats every 2.5 s) and `MASTER_CONNECT_RETRY=1`
//! make a replica notice a dead or cut-off primary within seconds and reconnect once it is
//! back, instead of after a minute.
//!
//! Start-up: the primary installs its datadir, starts, creates the schema (`db::SCHEMA_SQL`)
//! and a passwordless replication user `repl` (REPLICATION SLAVE only). Each replica installs
//! its own datadir, starts, waits until the primary serves the schema marker, then `CHANGE
//! MASTER TO MASTER_HOST=…, MASTER_USE_GTID=slave_pos` and `START SLAVE`: it replays the
//! primary's binary log from the start (the schema and users included). Ready = the primary
//! serves the marker; a replica says `Slave_IO_Running: Yes` and `Slave_SQL_Running: Yes` and
//! holds the marker. After a kill -9 a plain restart: a replica resumes from its GTID position
//! (kept in `mysql.gtid_slave_pos`, crash-safe) with `relay_log_recovery`.
//!
//! Does not own the shared lifecycle (`db`), the flags (`mod.rs`) or the clients.

use super::db::{MariaDb, MariaDbConfig, READY_MARKER, SCHEMA_SQL};
use crate::control::{Cmd, Remote};
use crate::db::{DbError, Primaries};
use crate::node::Node;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// How the MariaDB servers of a run replicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    /// A multi-primary Galera cluster (`--db galera`).
    #[default]
    Galera,
    /// The first node a primary, the others asynchronous GTID replicas (`--db mariadb`).
    Replicated,
}

impl Topology {
    /// The `--db` name of the topology.
    pub fn db_name(self) -> &'static str {
        match self {
            Topology::Galera => super::GALERA,
            Topology::Replicated => super::MARIADB,
        }
    }
}

/// The replication user the replicas log in as (no password; REPLICATION SLAVE only).
const REPL_USER_SQL: &str = "CREATE USER IF NOT EXISTS 'repl'@'%';
GRANT REPLICATION SLAVE ON *.* TO 'repl'@'%';";

/// Readiness of a node of the replicated topology: `$1` = base dir, `$2` = role (`serving`:
/// the server answers; `primary`: it also holds the schema marker; `replica`: both replication
/// threads run and the marker has arrived), `$3` = marker. Exits 3
/// (`systems::ready::NOT_RUNNING`) when the server is gone; prints why when not ready.
const READY_SCRIPT: &str = concat!(
    crate::systems::strays::live_sh!(),
    crate::systems::strays::log_tail_sh!(),
    r#"dir="$1"; role="$2"; marker="$3"
pid=$(cat "$dir/mariadbd.pid" 2>/dev/null || true)
if ! live "$pid" mariadbd; then
  log_tail "$dir/error.log" 8
  exit 3
fi
q() { mariadb --no-defaults -S "$dir/mysqld.sock" -u root -N -B -e "$1" 2>&1; }
s=$(q "SELECT 1") || { echo "not accepting connections on $dir/mysqld.sock: $s" | cut -c1-300; exit 1; }
[ "$role" = serving ] && exit 0
if [ "$role" = replica ]; then
  # Vertical output names every field (with -N it would not).
  st=$(mariadb --no-defaults -S "$dir/mysqld.sock" -u root -e "SHOW SLAVE STATUS\G" 2>&1) || { echo "SHOW SLAVE STATUS failed: $st" | cut -c1-300; exit 1; }
  io=$(printf '%s\n' "$st" | awk '$1=="Slave_IO_Running:"{print $2}')
  sql=$(printf '%s\n' "$st" | awk '$1=="Slave_SQL_Running:"{print $2}')
  if [ "$io" != Yes ] || [ "$sql" != Yes ]; then
    err=$(printf '%s\n' "$st" | sed -n 's/^ *Last_\(IO\|SQL\)_Error: \(..*\)$/\1: \2/p' | head -n 2 | tr '\n' ' ')
    echo "replication IO thread ${io:-not configured}, SQL thread ${sql:-not configured} (want Yes, Yes) $err" | cut -c1-400
    exit 1
  fi
fi
got=$(q "SELECT v FROM shakedown.marker WHERE id = 1")
[ "$got" = "$marker" ] && exit 0
echo "the schema has not arrived yet: $got" | cut -c1-300
exit 1
"#
);

/// `my.cnf` lines of node `node` in the replicated topology.
pub fn cnf(c: &MariaDbConfig, node: &Node, cluster: &[Node]) -> Vec<String> {
    let dir = &c.base_dir;
    let server_id = cluster
        .iter()
        .position(|n| n.name == node.name)
        .map_or(cluster.len() + 1, |i| i + 1);
    let mut lines = vec![
        format!("server_id={server_id}"),
        format!("log_bin={dir}/data/binlog"),
        format!("relay_log={dir}/data/relay"),
        "log_slave_updates=ON".into(),
        "gtid_strict_mode=ON".into(),
        "relay_log_recovery=ON".into(),
        "slave_net_timeout=5".into(),
    ];
    if let Some(n) = c.sync_binlog {
        lines.push(format!("sync_binlog={n}"));
    }
    if !MariaDb::is_bootstrap(node, cluster) {
        lines.push("read_only=1".into());
    }
    lines
}

/// The statements that make a node replicate from `primary` (an address, refused unless it
/// is made of address characters only: it is spliced into SQL).
fn change_master_sql(primary: &Node, port: u16) -> Result<String, String> {
    let host = &primary.host;
    let plain = !host.is_empty()
        && host
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '.' | ':' | '-' | '_'));
    if !plain {
        return Err(format!(
            "the primary's address {host:?} is not a plain host name or IP address"
        ));
    }
    Ok(format!(
        "STOP SLAVE; CHANGE MASTER TO MASTER_HOST='{host}', MASTER_PORT={port}, \
         MASTER_USER='repl', MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos, \
         MASTER_CONNECT_RETRY=1; START SLAVE;"
    ))
}

impl MariaDb {
    /// Start the primary, create the schema and the replication user.
    pub(super) fn setup_primary(&self, remote: &dyn Remote, node: &Node) -> Result<(), DbError> {
        self.start_process(remote, false, false)?;
        self.await_role(remote, node, "serving")?;
        self.sql(remote, node, SCHEMA_SQL)?;
        self.sql(remote, node, REPL_USER_SQL)?;
        Ok(())
    }

    /// Start a replica and point it at the primary once the primary has the schema.
    pub(super) fn setup_replica(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        self.start_process(remote, false, false)?;
        self.await_role(remote, node, "serving")?;
        self.await_schema_on_first(remote, node, cluster, "create the schema")?;
        let primary = cluster.first().ok_or_else(|| DbError::Other {
            node: node.name.clone(),
            message: "no nodes in the cluster".into(),
        })?;
        let sql = change_master_sql(primary, self.cfg.port).map_err(|message| DbError::Other {
            node: node.name.clone(),
            message,
        })?;
        self.sql(remote, node, &sql)?;
        Ok(())
    }

    /// Block until the node is ready for clients: the primary serves the schema, a replica
    /// replicates and has it.
    pub fn await_replicated(
        &self,
        remote: &dyn Remote,
        node: &Node,
        cluster: &[Node],
    ) -> Result<(), DbError> {
        let role = if MariaDb::is_bootstrap(node, cluster) {
            "primary"
        } else {
            "replica"
        };
        self.await_role(remote, node, role)
    }

    fn await_role(&self, remote: &dyn Remote, node: &Node, role: &str) -> Result<(), DbError> {
        let cmd = Cmd::script(
            READY_SCRIPT,
            [
                self.cfg.base_dir.clone(),
                role.to_string(),
                READY_MARKER.to_string(),
            ],
        )
        .sudo(true);
        let what = match role {
            "replica" => "mariadb replica",
            _ => "mariadb primary",
        };
        self.poll_ready(remote, node, &cmd, what)
    }
}

/// The primary is the first node: replicas never take over (no failover here).
impl Primaries for MariaDb {
    fn primaries(
        &self,
        _remotes: &[Arc<dyn Remote>],
        nodes: &[Node],
    ) -> Result<Vec<String>, DbError> {
        nodes
            .first()
            .map(|n| vec![n.name.clone()])
            .ok_or_else(|| DbError::Other {
                node: "-".into(),
                message: "no nodes in the cluster".into(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(k: usize) -> Vec<Node> {
        (1..=k)
            .map(|i| Node {
                name: format!("n{i}"),
                host: format!("10.104.0.{i}"),
            })
            .collect()
    }

    #[test]
    fn replicas_are_read_only_gtid_replicas_with_their_own_server_ids() {
        let cluster = nodes(3);
        let db = MariaDb::new(MariaDbConfig {
            topology: Topology::Replicated,
            sync_binlog: Some(1),
            ..Default::default()
        });
        let primary = db.my_cnf(&cluster[0], &cluster);
        let replica = db.my_cnf(&cluster[2], &cluster);
        for (cnf, want) in [
            (&primary, "server_id=1"),
            (&replica, "server_id=3"),
            (&replica, "read_only=1"),
            (&replica, "gtid_strict_mode=ON"),
            (&replica, "log_bin=/tmp/shakedown/mariadb/data/binlog"),
            (&primary, "sync_binlog=1"),
            (&primary, "bind-address=10.104.0.1"),
        ] {
            assert!(cnf.lines().any(|l| l == want), "{want} not in\n{cnf}");
        }
        assert!(!primary.contains("read_only"), "{primary}");
        let files = crate::db::Abilities::data_files(&db);
        assert!(files.contains(&"binlog.0*".to_string()), "{files:?}");
        assert!(!files.contains(&"galera.cache".to_string()), "{files:?}");
        assert!(!replica.contains("wsrep"), "{replica}");
        assert_eq!(
            db.command(true),
            db.command(false),
            "no --wsrep-new-cluster"
        );
    }

    #[test]
    fn the_replicas_point_at_the_primary_by_gtid_and_odd_addresses_are_refused() {
        let cluster = nodes(2);
        let sql = change_master_sql(&cluster[0], 3306).unwrap();
        assert!(
            sql.contains("MASTER_HOST='10.104.0.1', MASTER_PORT=3306")
                && sql.contains("MASTER_USE_GTID=slave_pos")
                && sql.ends_with("START SLAVE;"),
            "{sql}"
        );
        let odd = Node {
            name: "n1".into(),
            host: "x'; DROP TABLE t; --".into(),
        };
        assert!(
            change_master_sql(&odd, 3306)
                .unwrap_err()
                .contains("not a plain host")
        );
    }

    #[test]
    fn the_primary_is_the_first_node() {
        let db = MariaDb::new(MariaDbConfig {
            topology: Topology::Replicated,
            ..Default::default()
        });
        assert_eq!(db.primaries(&[], &nodes(3)).unwrap(), ["n1"]);
        assert!(db.primaries(&[], &[]).is_err());
        assert_eq!(Topology::Replicated.db_name(), "mariadb");
        assert_eq!(Topology::Galera.db_name(), "galera");
    }
}
