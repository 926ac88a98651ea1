//! The sandbox error type. Owns only the error variants and their messages.

use std::io;
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// Errors from sandbox operations. Messages name the command, node or file and the cause.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The process does not run as root.
    #[error(
        "sandbox needs root (effective uid is {euid}): it creates network namespaces, a bridge, \
         veth pairs and iptables rules; run it with sudo or as root"
    )]
    NotRoot {
        /// The effective user id of this process.
        euid: u32,
    },
    /// A configuration value is invalid.
    #[error("invalid sandbox config: {field}: {reason}")]
    InvalidConfig {
        /// The offending field (`name`, `nodes`, `subnet`, `state_dir`).
        field: &'static str,
        /// Why the value is rejected.
        reason: String,
    },
    /// Required packages are missing and cannot be installed by this process.
    #[error(
        "missing packages: {packages}; install them with `apt-get install {packages}` as root",
        packages = .packages.join(" ")
    )]
    MissingPackages {
        /// The missing package names.
        packages: Vec<String>,
    },
    /// Packages could not be installed on this machine.
    #[error(transparent)]
    Packages(#[from] crate::provision::ProvisionError),
    /// A command could not be started.
    #[error("cannot run `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The OS error.
        source: io::Error,
    },
    /// A command exited unsuccessfully.
    #[error("`{command}` failed with {status}: {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// The exit status, as printed by std (`exit status: 1`, `signal: 9`).
        status: String,
        /// The command's standard error, trimmed.
        stderr: String,
    },
    /// A file system operation failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was attempted (`create directory`, `write`, ...).
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The state file is unreadable or malformed.
    #[error("sandbox state file {path}: {reason}")]
    State {
        /// The state file path.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// No sandbox state exists at the given directory.
    #[error("sandbox is not up: no state file at {path}; run `shakedown sandbox up` first")]
    NotUp {
        /// The state file path that does not exist.
        path: PathBuf,
    },
    /// A sandbox is already up with a different shape than requested.
    #[error(
        "sandbox {name} is already up with {recorded}, but the config asks for {requested}; \
         run `shakedown sandbox down` first"
    )]
    ConfigMismatch {
        /// The sandbox name.
        name: String,
        /// The recorded shape (nodes and subnet).
        recorded: String,
        /// The requested shape.
        requested: String,
    },
    /// A name or address the sandbox would create is already in use by something else.
    #[error(
        "{what} already exists on this host and is not recorded in {state_file}; \
         another sandbox or tool owns it (choose another name/subnet, or remove it by hand)"
    )]
    Conflict {
        /// The conflicting object (`network namespace sd-x-n1`, `address 10.78.0.3/24 on eth0`).
        what: String,
        /// The state file that would have recorded it.
        state_file: PathBuf,
    },
    /// A node's sshd did not accept connections in time.
    #[error(
        "node {node}: sshd at {address}:22 did not accept connections within {waited_ms} ms \
         (log: {log})"
    )]
    NotReady {
        /// The node name.
        node: String,
        /// The node address.
        address: Ipv4Addr,
        /// How long `up` waited.
        waited_ms: u64,
        /// The node's sshd log file.
        log: PathBuf,
    },
    /// A per-node step panicked (a bug): what it said.
    #[error("a sandbox step panicked: {what}")]
    Panicked {
        /// The panic's message.
        what: String,
    },
}

/// Result type of this module.
pub type Result<T> = std::result::Result<T, SandboxError>;
