//! Validated test configuration: what `cli` turns command-line arguments into, once.
//!
//! Owns `Node` and `TestConfig` and their validation rules. clap types never go past `cli`; the
//! rest of the program sees only these. Does no IO besides reading files named by the user.

use serde::Serialize;

/// A node of the cluster under test.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct Node {
    /// Short name used in histories, logs and grudges (e.g. `n1`).
    pub name: String,
    /// Address to reach it over SSH and for client traffic (IP or DNS name).
    pub host: String,
}

/// A config error, naming what was wrong.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {message}")]
pub struct ConfigError {
    /// Which flag, file or entry.
    pub what: String,
    /// What is wrong and what was expected.
    pub message: String,
}

impl ConfigError {
    /// Build an error.
    pub fn new(what: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            what: what.into(),
            message: message.into(),
        }
    }
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':'))
}

/// Parse a node list: comma- or whitespace-separated entries, each `host` or `name=host`
/// (a bare `host` is also its name). `source` labels errors (e.g. `--nodes`).
pub fn parse_nodes(text: &str, source: &str) -> Result<Vec<Node>, ConfigError> {
    let mut nodes: Vec<Node> = Vec::new();
    for (i, entry) in text
        .split(|c: char| c == ',' || c.is_whitespace())
        .enumerate()
    {
        let entry = entry.trim();
        if entry.is_empty() {
            if text.contains(",,")
                || text.trim_start().starts_with(',')
                || text.trim_end().ends_with(',')
            {
                return Err(ConfigError::new(
                    source,
                    format!("empty node entry in {text:?}"),
                ));
            }
            continue;
        }
        let (name, host) = match entry.split_once('=') {
            Some((n, h)) => (n.trim(), h.trim()),
            None => (entry, entry),
        };
        for (label, v) in [("name", name), ("host", host)] {
            if !valid_name(v) {
                return Err(ConfigError::new(
                    source,
                    format!(
                        "entry {} ({entry:?}): invalid node {label} {v:?}: expected letters, digits, '-', '.', '_' or ':'",
                        i + 1
                    ),
                ));
            }
        }
        if nodes.iter().any(|n| n.name == name) {
            return Err(ConfigError::new(
                source,
                format!("node {name:?} is listed twice"),
            ));
        }
        nodes.push(Node {
            name: name.to_string(),
            host: host.to_string(),
        });
    }
    if nodes.is_empty() {
        return Err(ConfigError::new(source, "no nodes given"));
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bare_hosts_and_named_hosts() {
        let n = parse_nodes("n1=10.0.0.1, n2=10.0.0.2 db3.example", "--nodes").unwrap();
        assert_eq!(n.len(), 3);
        assert_eq!(
            n[0],
            Node {
                name: "n1".into(),
                host: "10.0.0.1".into()
            }
        );
        assert_eq!(n[2].name, "db3.example");
    }

    #[test]
    fn rejects_malformed_lists_naming_the_entry() {
        let e = parse_nodes("n1,,n2", "--nodes").unwrap_err().to_string();
        assert!(e.contains("--nodes") && e.contains("empty"), "{e}");
        let e = parse_nodes("n1;rm -rf /", "--nodes")
            .unwrap_err()
            .to_string();
        assert!(e.contains("invalid node"), "{e}");
        let e = parse_nodes("n1,n1", "--nodes").unwrap_err().to_string();
        assert!(e.contains("twice"), "{e}");
        assert!(parse_nodes("  ", "--nodes").is_err());
        assert!(parse_nodes("a=", "--nodes").is_err());
    }
}

/// Which system a run tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum DbKind {
    /// etcd (`db::etcd`, `client::etcd`).
    #[default]
    Etcd,
    /// PostgreSQL primary + streaming replicas (`db::postgres`, `client::postgres`).
    Postgres,
}

impl DbKind {
    /// The `--db` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DbKind::Etcd => "etcd",
            DbKind::Postgres => "postgres",
        }
    }
}

/// Where a client thread sends its reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ReadFrom {
    /// The thread's bound node.
    #[default]
    Own,
    /// The primary (PostgreSQL).
    Primary,
    /// A random replica per read (PostgreSQL).
    Replica,
    /// A random node per read.
    Any,
}

impl ReadFrom {
    /// The `--read-from` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ReadFrom::Own => "own",
            ReadFrom::Primary => "primary",
            ReadFrom::Replica => "replica",
            ReadFrom::Any => "any",
        }
    }
}

/// Everything a run needs, validated.
#[derive(Debug, Clone)]
pub struct TestConfig {
    /// Test name, used for the run directory (`reports/<name>/<timestamp>`).
    pub name: String,
    /// Explicit nodes; `None` means the built-in sandbox.
    pub nodes: Option<Vec<Node>>,
    /// Sandbox settings when `nodes` is `None`.
    pub sandbox: crate::sandbox::SandboxConfig,
    /// SSH settings.
    pub ssh: crate::control::SshConfig,
    /// Number of client threads.
    pub concurrency: usize,
    /// Target client ops per second over all threads; 0 means as fast as possible.
    pub rate: f64,
    /// Length of the main phase in seconds.
    pub time_limit_s: f64,
    /// Seed of every random choice (ops, fault targets).
    pub seed: u64,
    /// The system under test.
    pub db: DbKind,
    /// etcd settings.
    pub etcd: crate::db::etcd::EtcdConfig,
    /// PostgreSQL settings.
    pub postgres: crate::db::postgres::PostgresConfig,
    /// Where reads go.
    pub read_from: ReadFrom,
    /// Nodes `replica`/`any` reads may pick from (names); empty = all eligible nodes.
    pub read_nodes: Vec<String>,
    /// Workload spec name or path, as given.
    pub workload_name: String,
    /// Parsed workload spec.
    pub workload: crate::spec::WorkloadSpec,
    /// Nemesis spec name, path or package list, as given.
    pub nemesis_name: String,
    /// Parsed nemesis schedule.
    pub nemesis: crate::spec::NemesisSpec,
    /// Linearizable or serializable reads.
    pub read_mode: crate::client::etcd::ReadMode,
    /// Client op timeout; a timed-out op is recorded `info`.
    pub op_timeout_ms: u64,
    /// Root of run directories.
    pub reports_dir: std::path::PathBuf,
    /// Seconds to wait after healing before the final reads.
    pub settle_s: f64,
    /// Time budget of the linearizability check.
    pub check_time_limit_s: f64,
    /// How much work goes into the witness of an invalid key (`--witness`).
    pub witness: crate::checker::linear::WitnessMode,
}

impl TestConfig {
    /// The command line that reruns this test with the same seed.
    pub fn rerun_command(&self) -> String {
        let mut parts = vec!["shakedown".to_string(), "run".into()];
        if let Some(nodes) = &self.nodes {
            let list: Vec<String> = nodes
                .iter()
                .map(|n| format!("{}={}", n.name, n.host))
                .collect();
            parts.push(format!("--nodes {}", list.join(",")));
        }
        parts.push(format!("--db {}", self.db.as_str()));
        if self.db == DbKind::Postgres {
            let pg = &self.postgres;
            parts.push(format!("--synchronous-commit {}", pg.synchronous_commit));
            if let Some(names) = &pg.synchronous_standby_names {
                parts.push(format!(
                    "--synchronous-standby-names {}",
                    crate::control::quote(names)
                ));
            }
        }
        if self.read_from != ReadFrom::Own {
            parts.push(format!("--read-from {}", self.read_from.as_str()));
        }
        if !self.read_nodes.is_empty() {
            parts.push(format!("--read-nodes {}", self.read_nodes.join(",")));
        }
        parts.push(format!("--concurrency {}", self.concurrency));
        parts.push(format!("--rate {}", self.rate));
        parts.push(format!("--time-limit {}", self.time_limit_s));
        parts.push(format!("--workload {}", self.workload_name));
        parts.push(format!("--nemesis {}", self.nemesis_name));
        parts.push(format!("--read-mode {}", self.read_mode));
        if let Some(v) = &self.workload.version_source {
            parts.push(format!("--version-source {v}"));
        }
        parts.push(format!("--seed {}", self.seed));
        parts.join(" ")
    }
}
