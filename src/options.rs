//! The words a test configuration shares with the parts it configures: `ConfigError` (what a
//! flag, spec file or entry got wrong), `ReadMode` and `ReadFrom` (what a run asks of reads).
//! Defined here, below `config`, `spec`, `systems` and `client`, so each of them can name them
//! without depending on the others (the test configuration is `config`'s). A leaf: imports
//! nothing from the crate but the core's `node` errors. No IO.

use serde::Serialize;

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

impl From<crate::node::NodeListError> for ConfigError {
    fn from(e: crate::node::NodeListError) -> ConfigError {
        ConfigError::new(e.source, e.message)
    }
}

/// Consistency a run asks of reads (`--read-mode`); a system refuses modes it cannot serve
/// (`systems::System::validate`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadMode {
    /// Linearizable reads (etcd: quorum reads through the leader).
    #[default]
    Linearizable,
    /// Reads served locally by whichever node the client talks to: may be stale.
    Serializable,
}

impl ReadMode {
    /// The `--read-mode` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ReadMode::Linearizable => "linearizable",
            ReadMode::Serializable => "serializable",
        }
    }
}

impl std::fmt::Display for ReadMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
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
