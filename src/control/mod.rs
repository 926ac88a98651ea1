//! Remote command execution: the only module that knows SSH.
//!
//! Owns: the `Remote` trait (exec with exit status + stdout/stderr, upload, download), its ssh2
//! implementation `SshRemote` (in `ssh`), the `Cmd` builder and `quote` (in `cmd`), the error type
//! `ExecError`, and helpers that run on every node in parallel (`connect_all`, `on_all`,
//! `exec_async`; bounded by `fanout`), and the time bound a thread's commands run under (`deadline`). It does not own what is run: OS/DB setup, nemeses and log collection build
//! `Cmd`s and call `Remote`; the sandbox cluster that provides the sshds lives in `sandbox`.
//!
//! Threading: `Remote` is blocking (ssh2 is). Run it from threads (`on_all`) or from async code via
//! `exec_async`, which uses `tokio::task::spawn_blocking`.

#[cfg(test)]
pub mod canned;
mod channel;
mod cmd;
pub mod deadline;
pub mod fanout;
mod ssh;
pub mod words;

pub use cmd::{Cmd, quote};
pub use ssh::{SshConfig, SshRemote};

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The result of a command that ran to completion (any exit status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    /// Exit status. When the process was killed by a signal, `128 + signal number` (as a shell
    /// reports it), or 255 for a signal whose name is unknown; see `signal`.
    pub status: i32,
    /// Name of the signal that killed the process without `SIG` (e.g. `"KILL"`), if any.
    pub signal: Option<String>,
    /// Standard output, decoded as UTF-8 (invalid sequences replaced by U+FFFD).
    pub stdout: String,
    /// Standard error, decoded as UTF-8 (invalid sequences replaced by U+FFFD).
    pub stderr: String,
}

impl ExecOutput {
    /// Exit status 0 and no signal.
    pub fn success(&self) -> bool {
        self.status == 0 && self.signal.is_none()
    }
}

/// Everything that can go wrong talking to a node. Every variant names the node.
///
/// Retry policy (`SshConfig::retries`, exponential backoff from `SshConfig::backoff_ms`):
/// - `Connect` and `Handshake` (TCP connect, SSH banner/key exchange) are retried when opening a
///   session.
/// - A session that fails *before the command was sent* (opening the channel fails: the TCP
///   connection died while idle) is dropped, reconnected and the command is sent again.
/// - Nothing after the command was sent is ever retried: `Transport` and `Timeout` after that
///   point are returned as they are, because the command may have run (it could have side effects).
/// - `HostKey` and `Auth` are never retried (they do not fix themselves).
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// TCP connection to the node failed (refused, unreachable, timed out, name not resolved).
    #[error("node {node}: cannot connect to {addr}: {reason}")]
    Connect {
        /// Node name.
        node: String,
        /// `host:port` as configured.
        addr: String,
        /// Cause, from the OS or the resolver.
        reason: String,
    },
    /// TCP connected but the SSH handshake (banner, key exchange) failed.
    #[error("node {node}: SSH handshake with {addr} {reason}")]
    Handshake {
        /// Node name.
        node: String,
        /// `host:port` as configured.
        addr: String,
        /// What happened, as the rest of the sentence: "timed out after 10 s" or
        /// "failed: the server closed the connection" (see `words::handshake_error`).
        reason: String,
    },
    /// The server's host key is not the one in known_hosts (or is absent from it).
    #[error("node {node}: host key of {addr} rejected: {reason}")]
    HostKey {
        /// Node name.
        node: String,
        /// `host:port` as configured.
        addr: String,
        /// What was wrong, naming the known_hosts file.
        reason: String,
    },
    /// Public-key authentication failed.
    #[error("node {node}: authentication as user {user} failed: {reason}")]
    Auth {
        /// Node name.
        node: String,
        /// SSH user.
        user: String,
        /// Cause (key file, agent, server refusal).
        reason: String,
    },
    /// The command did not finish within its timeout; the session it ran on was discarded.
    #[error("node {node}: command timed out after {}: {cmd}", words::duration_ms(*timeout_ms))]
    Timeout {
        /// Node name.
        node: String,
        /// The command (shell text, possibly cut).
        cmd: String,
        /// The timeout that expired.
        timeout_ms: u64,
    },
    /// The work the command belongs to (a nemesis op, a heal) ran out of its time bound
    /// (`deadline`) before the command could be sent: it was not run.
    #[error("node {node}: not run, the operation's time bound had already passed: {cmd}")]
    OutOfTime {
        /// Node name.
        node: String,
        /// The command (shell text, possibly cut).
        cmd: String,
    },
    /// The SSH connection failed while the command was (possibly) running.
    #[error("node {node}: SSH connection failed while running {cmd}: {reason}")]
    Transport {
        /// Node name.
        node: String,
        /// The command (shell text, possibly cut).
        cmd: String,
        /// Cause, in words (`words::ssh_error`, `words::io_error`).
        reason: String,
    },
    /// The command ran and exited non-zero (only from `exec_ok`, `upload`, `download`).
    #[error("node {node}: command exited with status {status}: {cmd}: {stderr}")]
    Failed {
        /// Node name.
        node: String,
        /// The command (shell text, possibly cut).
        cmd: String,
        /// Exit status (see `ExecOutput::status`).
        status: i32,
        /// Standard error of the command, trimmed.
        stderr: String,
    },
    /// A file asked for by [`Remote::download`] does not exist on the node.
    #[error("node {node}: no file {path}")]
    NoSuchFile {
        /// Node name.
        node: String,
        /// The path on the node.
        path: String,
    },
    /// A local file could not be read or written (download target, private key).
    #[error("node {node}: local file {}: {source}", path.display())]
    Io {
        /// Node name.
        node: String,
        /// Local path.
        path: PathBuf,
        /// OS error.
        source: std::io::Error,
    },
    /// The node could not be reached when the remote was set up (see `connect_each`), so no
    /// command was sent.
    #[error("node {node}: not reached: {reason}")]
    NotConnected {
        /// Node name.
        node: String,
        /// Why, in words (the connect error, without the node name).
        reason: String,
    },
    /// The blocking task running a command panicked or was cancelled (`exec_async`).
    #[error("node {node}: command task did not complete: {reason}")]
    Task {
        /// Node name.
        node: String,
        /// Why (panic or cancellation).
        reason: String,
    },
}

impl ExecError {
    /// The node this error is about.
    pub fn node(&self) -> &str {
        match self {
            ExecError::Connect { node, .. }
            | ExecError::Handshake { node, .. }
            | ExecError::HostKey { node, .. }
            | ExecError::Auth { node, .. }
            | ExecError::Timeout { node, .. }
            | ExecError::OutOfTime { node, .. }
            | ExecError::Transport { node, .. }
            | ExecError::Failed { node, .. }
            | ExecError::NoSuchFile { node, .. }
            | ExecError::Io { node, .. }
            | ExecError::NotConnected { node, .. }
            | ExecError::Task { node, .. } => node,
        }
    }
}

/// One or more nodes could not be reached by `connect_all`; one error per failed node.
#[derive(Debug)]
pub struct ConnectAllError {
    /// The failures, in node order.
    pub failures: Vec<ExecError>,
}

impl fmt::Display for ConnectAllError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} node(s) unreachable", self.failures.len())?;
        for e in &self.failures {
            write!(f, "; {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConnectAllError {}

/// A node we can run commands on. Implementations are blocking and thread-safe: several threads
/// may call `exec` at once (the SSH implementation bounds how many run concurrently).
pub trait Remote: Send + Sync {
    /// The node's name (as used in histories and messages).
    fn node(&self) -> &str;

    /// Run `cmd` and wait for it. Any exit status is `Ok`; `Err` means the command could not be
    /// run or its outcome is unknown (timeout, transport).
    ///
    /// The command ends when its stdout and stderr are closed and it exited: a background process
    /// that inherits them keeps it running until the timeout. Start daemons with their output
    /// redirected (`daemon >log 2>&1 &`, or `setsid`/`start-stop-daemon`).
    fn exec(&self, cmd: &Cmd) -> Result<ExecOutput, ExecError>;

    /// Run `cmd`; a non-zero exit (or a signal) becomes `ExecError::Failed` carrying stderr.
    /// Returns stdout.
    fn exec_ok(&self, cmd: &Cmd) -> Result<String, ExecError> {
        let out = self.exec(cmd)?;
        if out.success() {
            return Ok(out.stdout);
        }
        Err(ExecError::Failed {
            node: self.node().to_string(),
            cmd: cmd.to_string(),
            status: out.status,
            stderr: out.stderr.trim().to_string(),
        })
    }

    /// Write `contents` to `remote_path` (as root) with permission bits `mode` (e.g. `0o755`).
    /// The file is written to a temporary name in the same directory and renamed into place, so a
    /// reader never sees a partial file.
    fn upload(&self, contents: &[u8], remote_path: &str, mode: u32) -> Result<(), ExecError>;

    /// Copy `remote_path` (read as root) to `local_path`, byte-exact.
    fn download(&self, remote_path: &str, local_path: &Path) -> Result<(), ExecError>;
}

/// Connect to every `(name, host)` in parallel with `cfg`. Either every node is connected
/// (remotes in input order) or the error lists each node that failed and why.
pub fn connect_all(
    nodes: &[(String, String)],
    cfg: &SshConfig,
) -> Result<Vec<Arc<dyn Remote>>, ConnectAllError> {
    let mut remotes: Vec<Arc<dyn Remote>> = Vec::with_capacity(nodes.len());
    let mut failures = Vec::new();
    for r in connect_results(nodes, cfg) {
        match r {
            Ok(remote) => remotes.push(Arc::new(remote)),
            Err(e) => failures.push(e),
        }
    }
    if failures.is_empty() {
        Ok(remotes)
    } else {
        Err(ConnectAllError { failures })
    }
}

/// Connect to every `(name, host)` at once; one result per node, in input order. Not bounded:
/// a node that does not answer costs its connect timeout and retries (~20 s), and bounded,
/// unreachable nodes would cost that once per wave of [`fanout::FAN_OUT`].
fn connect_results(
    nodes: &[(String, String)],
    cfg: &SshConfig,
) -> Vec<Result<SshRemote, ExecError>> {
    fanout::all(nodes, |(name, host)| SshRemote::connect(name, host, cfg))
        .into_iter()
        .zip(nodes)
        .map(|(r, (name, _))| {
            r.unwrap_or_else(|p| {
                Err(ExecError::Task {
                    node: name.clone(),
                    reason: format!(
                        "connect thread panicked: {}",
                        fanout::panic_words(p.as_ref())
                    ),
                })
            })
        })
        .collect()
}

/// A node that could not be reached: every command fails at once with
/// `ExecError::NotConnected` naming why. Lets code that works node by node (heal) treat an
/// unreachable node like any node whose step failed.
#[derive(Debug)]
pub struct Unreachable {
    node: String,
    reason: String,
}

impl Unreachable {
    /// A stand-in for `node`, unreachable because of `err`.
    pub fn new(err: &ExecError) -> Unreachable {
        let node = err.node().to_string();
        let text = err.to_string();
        let reason = text
            .strip_prefix(&format!("node {node}: "))
            .unwrap_or(&text)
            .to_string();
        Unreachable { node, reason }
    }

    /// Why the node was not reached.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    fn error(&self) -> ExecError {
        ExecError::NotConnected {
            node: self.node.clone(),
            reason: self.reason.clone(),
        }
    }
}

impl Remote for Unreachable {
    fn node(&self) -> &str {
        &self.node
    }
    fn exec(&self, _cmd: &Cmd) -> Result<ExecOutput, ExecError> {
        Err(self.error())
    }
    fn upload(&self, _: &[u8], _: &str, _: u32) -> Result<(), ExecError> {
        Err(self.error())
    }
    fn download(&self, _: &str, _: &Path) -> Result<(), ExecError> {
        Err(self.error())
    }
}

/// Connect to every node in parallel, keeping going when some fail: one remote per node in
/// input order (an [`Unreachable`] for each node that failed) and the failures.
pub fn connect_each(
    nodes: &[(String, String)],
    cfg: &SshConfig,
) -> (Vec<Arc<dyn Remote>>, Vec<ExecError>) {
    let mut remotes: Vec<Arc<dyn Remote>> = Vec::with_capacity(nodes.len());
    let mut failures = Vec::new();
    for r in connect_results(nodes, cfg) {
        match r {
            Ok(remote) => remotes.push(Arc::new(remote)),
            Err(e) => {
                remotes.push(Arc::new(Unreachable::new(&e)));
                failures.push(e);
            }
        }
    }
    (remotes, failures)
}

/// Run `f` on every remote in parallel (at most [`fanout::FAN_OUT`] at once); results in
/// `remotes` order. A panic inside `f` is propagated to the caller after every remote was tried.
pub fn on_all<T: Send>(remotes: &[Arc<dyn Remote>], f: impl Fn(&dyn Remote) -> T + Sync) -> Vec<T> {
    fanout::each(remotes, fanout::FAN_OUT, |r| f(r.as_ref()))
        .into_iter()
        .map(|r| r.unwrap_or_else(|p| std::panic::resume_unwind(p)))
        .collect()
}

/// Run `cmd` on `remote` from async code (on tokio's blocking pool).
pub async fn exec_async(remote: Arc<dyn Remote>, cmd: Cmd) -> Result<ExecOutput, ExecError> {
    let node = remote.node().to_string();
    match tokio::task::spawn_blocking(move || remote.exec(&cmd)).await {
        Ok(r) => r,
        Err(e) => Err(ExecError::Task {
            node,
            reason: e.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_config_from_partial_toml_uses_defaults() {
        let cfg: SshConfig = toml::from_str(
            "user = \"admin\"\nprivate_key = \"/k/id\"\nstrict_host_key_checking = false\n",
        )
        .unwrap();
        assert_eq!(cfg.user, "admin");
        assert_eq!(cfg.private_key, Some(PathBuf::from("/k/id")));
        assert!(!cfg.strict_host_key_checking);
        assert_eq!(cfg.port, 22);
        assert_eq!(cfg.max_channels, SshConfig::default().max_channels);
        let err = toml::from_str::<SshConfig>("usr = \"x\"").unwrap_err();
        assert!(err.to_string().contains("usr"), "{err}");
    }

    #[test]
    fn exec_error_messages_name_the_node() {
        let e = ExecError::Connect {
            node: "n2".into(),
            addr: "10.0.0.2:22".into(),
            reason: "connection refused".into(),
        };
        assert_eq!(e.node(), "n2");
        assert_eq!(
            e.to_string(),
            "node n2: cannot connect to 10.0.0.2:22: connection refused"
        );
        let all = ConnectAllError { failures: vec![e] };
        assert_eq!(
            all.to_string(),
            "1 node(s) unreachable; node n2: cannot connect to 10.0.0.2:22: connection refused"
        );
    }
}
