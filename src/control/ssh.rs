//! `SshRemote`: the ssh2 (libssh2) implementation of `Remote`.
//!
//! Owns: TCP connect (with `TCP_NODELAY`; keepalive is set by `channel`), SSH handshake,
//! host-key verification against known_hosts, public-key authentication (key file or
//! ssh-agent), a bounded pool of sessions per node, per-command deadlines, reconnect/retry
//! policy, and upload/download over `sh`. It does not own running one command on a session
//! (`channel`), command construction (`cmd`) or the error type (`mod.rs`).
//!
//! Design (measured with `measure_latency` in `tests/control.rs`): libssh2 serialises everything on a session
//! behind one lock, and a blocking read on one channel stalls the others. So each session runs one
//! command at a time, and a node has up to `SshConfig::max_channels` sessions (one TCP connection
//! each), opened lazily: a sequential caller only ever uses the first, persistent one. Sessions
//! run in non-blocking mode; one loop per command writes stdin and drains stdout and stderr
//! together (so neither stream can fill its window and stall the other) and `poll(2)`s the socket
//! with the time left until the command's deadline. A session whose command timed out or failed
//! in transport is discarded (its state is unknown) and replaced on next use.
//!
//! Numbers on the 2-core dev machine (loopback sshd, release build, loaded by other builds):
//! sequential `true` ≈ 2.5–3.5 ms per command with `TCP_NODELAY`, ≈ 27–50 ms without; 8 threads
//! on 8 sessions ≈ 430–730 commands/s, on 1 session ≈ 300–500/s. Sharing one ssh2 session between
//! threads (a channel each, blocking mode) failed 392 of 400 commands ("Unable to send
//! channel-open request"). If the login shell is bash and `SHLVL` is unset, bash sources
//! `~/.bashrc` for every command; root's here runs `pyenv init` and costs ~100–300 ms per command.
//!
//! Known limits: a timed-out command is not killed on the node (without a pty, sshd leaves the
//! process running when the channel closes; it dies on its next write to the closed pipe at
//! most). A peer that vanishes silently (no RST) is noticed by TCP keepalive and TCP_USER_TIMEOUT
//! after ~11–15 s, or at the command's deadline if sooner.

use super::channel::{Conn, RawOutput, RunError, run_on, set_keepalive};
use super::{Cmd, ExecError, ExecOutput, Remote, deadline, words};
use ssh2::{CheckResult, KnownHostFileKind, Session};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How to reach and authenticate to nodes, shared by every node of a test.
///
/// Deserializable (e.g. from TOML); missing fields take the `Default` values.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SshConfig {
    /// SSH user name. When it is not `root`, commands built with `Cmd::sudo(true)` (and uploads
    /// and downloads) go through `sudo -n`.
    pub user: String,
    /// TCP port of the SSH servers.
    pub port: u16,
    /// Private key file (OpenSSH or PEM format, no passphrase). `None` → use the ssh-agent.
    pub private_key: Option<PathBuf>,
    /// ssh-agent socket used when `private_key` is `None`. `None` → `$SSH_AUTH_SOCK`.
    pub agent_socket: Option<PathBuf>,
    /// known_hosts file (OpenSSH format, hashed entries supported). `None` → `$HOME/.ssh/known_hosts`.
    pub known_hosts: Option<PathBuf>,
    /// Verify the server's host key against `known_hosts` (default `true`). `false` accepts any
    /// host key and writes nothing: only for throwaway clusters.
    pub strict_host_key_checking: bool,
    /// Limit for each of TCP connect, SSH handshake and authentication, in milliseconds.
    pub connect_timeout_ms: u64,
    /// Default time a command may run (from channel open to exit), in milliseconds; `0` = no
    /// limit. `Cmd::timeout_ms` overrides it per command.
    pub command_timeout_ms: u64,
    /// Extra attempts after a connect/handshake failure, or after a session turns out dead before
    /// the command was sent. Never used for a command that may have run.
    pub retries: u32,
    /// Delay before the first retry, in milliseconds; doubled after each retry, capped at 5000.
    pub backoff_ms: u64,
    /// Most commands running at once on one node (= most sessions per node). OpenSSH's default
    /// `MaxStartups` starts refusing at 10 unauthenticated connections, so keep this ≤ 10. `0` is
    /// treated as 1.
    pub max_channels: usize,
    /// Set `TCP_NODELAY` on the connection (default `true`; without it every command pays
    /// Nagle/delayed-ACK latency, ~40 ms).
    pub tcp_nodelay: bool,
}

impl Default for SshConfig {
    fn default() -> Self {
        SshConfig {
            user: "root".to_string(),
            port: 22,
            private_key: None,
            agent_socket: None,
            known_hosts: None,
            strict_host_key_checking: true,
            connect_timeout_ms: 5_000,
            command_timeout_ms: 60_000,
            retries: 3,
            backoff_ms: 100,
            max_channels: 8,
            tcp_nodelay: true,
        }
    }
}

/// Most a retry waits, in milliseconds.
const BACKOFF_CAP_MS: u64 = 5_000;

/// Writes stdin to a temporary file next to the target, checks the byte count, sets the mode and
/// renames it into place. `$1` path, `$2` octal mode, `$3` expected length in bytes.
const UPLOAD_SCRIPT: &str = r#"set -e
t="$1.shakedown-upload.$$"
trap 'rm -f "$t"' EXIT
cat > "$t"
n=$(wc -c < "$t")
if [ "$n" -ne "$3" ]; then echo "short upload: received $n of $3 bytes" >&2; exit 1; fi
chmod "$2" "$t"
mv -f "$t" "$1""#;

/// Sessions of one node: idle ones, and how many exist (idle + in use + being opened).
struct Pool {
    idle: Vec<Conn>,
    open: usize,
}

/// A session reserved for one command; returned to the pool only if `keep` is set.
struct Lease<'a> {
    remote: &'a SshRemote,
    conn: Option<Conn>,
    keep: bool,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let mut pool = self.remote.lock_pool();
        let discarded = match self.conn.take() {
            Some(c) if self.keep => {
                pool.idle.push(c);
                None
            }
            other => {
                pool.open -= 1;
                other
            }
        };
        drop(pool);
        if let Some(mut c) = discarded {
            c.break_off();
        }
        self.remote.slot_freed.notify_one();
    }
}

/// SSH connection(s) to one node. Thread-safe; see the module doc for the session pool.
pub struct SshRemote {
    node: String,
    host: String,
    cfg: SshConfig,
    pool: Mutex<Pool>,
    slot_freed: Condvar,
    /// Sessions successfully opened over this remote's lifetime (first one included).
    sessions_opened: AtomicU64,
    /// Since when the node has been unreachable (a connect that used up its retries failed),
    /// `None` while it answers. While set, opening a session tries once, without retries, so a
    /// node that is down costs each caller one connect timeout, not `retries + 1` of them.
    down_since: Mutex<Option<Instant>>,
    /// Times a session was opened again after the node had been unreachable.
    reconnects: AtomicU64,
}

impl std::fmt::Debug for SshRemote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SshRemote")
            .field("node", &self.node)
            .field("host", &self.host)
            .field("port", &self.cfg.port)
            .field("user", &self.cfg.user)
            .finish()
    }
}

fn backoff(cfg: &SshConfig, attempt: u32) -> Duration {
    let ms = cfg
        .backoff_ms
        .saturating_mul(1u64 << attempt.saturating_sub(1).min(20));
    Duration::from_millis(ms.min(BACKOFF_CAP_MS))
}

impl SshRemote {
    /// Open the first session to `host` (name or IP) for node `node_name`: TCP connect, handshake,
    /// host-key check, authentication. Connect and handshake failures are retried
    /// `cfg.retries` times with backoff; host-key and authentication failures are not.
    pub fn connect(node_name: &str, host: &str, cfg: &SshConfig) -> Result<SshRemote, ExecError> {
        let mut cfg = cfg.clone();
        cfg.max_channels = cfg.max_channels.max(1);
        let remote = SshRemote {
            node: node_name.to_string(),
            host: host.to_string(),
            cfg,
            pool: Mutex::new(Pool {
                idle: Vec::new(),
                open: 0,
            }),
            slot_freed: Condvar::new(),
            sessions_opened: AtomicU64::new(0),
            down_since: Mutex::new(None),
            reconnects: AtomicU64::new(0),
        };
        let conn = remote.open_conn()?;
        {
            let mut pool = remote.lock_pool();
            pool.idle.push(conn);
            pool.open = 1;
        }
        Ok(remote)
    }

    /// The configuration this remote was opened with.
    pub fn config(&self) -> &SshConfig {
        &self.cfg
    }

    /// Sessions opened since `connect` (including the first): more than `open_sessions()` means
    /// sessions were replaced after a timeout, transport error or dead connection.
    pub fn sessions_opened(&self) -> u64 {
        self.sessions_opened.load(Ordering::Relaxed)
    }

    /// Times the node was reached again after it had been unreachable (its sshd died, it
    /// rebooted, the network was down): a connect failed with every retry, a later one worked.
    pub fn reconnects(&self) -> u64 {
        self.reconnects.load(Ordering::Relaxed)
    }

    /// Whether the last attempt to open a session failed (the node is unreachable as far as we
    /// know); the next command still tries once.
    pub fn is_down(&self) -> bool {
        self.down_since
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Number of sessions currently open to the node (idle + in use).
    pub fn open_sessions(&self) -> usize {
        self.lock_pool().open
    }

    fn addr_label(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.cfg.port)
        } else {
            format!("{}:{}", self.host, self.cfg.port)
        }
    }

    fn lock_pool(&self) -> MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Open a session, retrying connect/handshake failures with backoff (once only while the
    /// node is known to be down; see `down_since`).
    fn open_conn(&self) -> Result<Conn, ExecError> {
        let mut attempt = 0;
        let retries = if self.is_down() { 0 } else { self.cfg.retries };
        loop {
            match self.try_open_conn() {
                Ok(c) => {
                    let was_down = self
                        .down_since
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .take();
                    if let Some(since) = was_down {
                        self.reconnects.fetch_add(1, Ordering::Relaxed);
                        tracing::info!(
                            node = %self.node,
                            down_ms = since.elapsed().as_millis() as u64,
                            "reconnected"
                        );
                    }
                    return Ok(c);
                }
                Err(e @ (ExecError::Connect { .. } | ExecError::Handshake { .. }))
                    if attempt < retries =>
                {
                    attempt += 1;
                    tracing::debug!(node = %self.node, attempt, error = %e, "retrying connect");
                    std::thread::sleep(backoff(&self.cfg, attempt));
                }
                Err(e) => {
                    if matches!(e, ExecError::Connect { .. } | ExecError::Handshake { .. }) {
                        self.down_since
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get_or_insert_with(Instant::now);
                    }
                    return Err(e);
                }
            }
        }
    }

    /// Drop every idle session: one was found dead, and sessions to one node usually die
    /// together (sshd restarted, node rebooted), so the others would only fail in turn.
    fn discard_idle(&self) {
        let mut pool = self.lock_pool();
        let idle = std::mem::take(&mut pool.idle);
        pool.open -= idle.len();
        drop(pool);
        for mut c in idle {
            c.break_off();
        }
        self.slot_freed.notify_all();
    }

    fn try_open_conn(&self) -> Result<Conn, ExecError> {
        let addr = self.addr_label();
        let connect_err = |reason: String| ExecError::Connect {
            node: self.node.clone(),
            addr: addr.clone(),
            reason,
        };
        let handshake_err = |e: ssh2::Error| ExecError::Handshake {
            node: self.node.clone(),
            addr: addr.clone(),
            reason: words::handshake_error(&e, self.cfg.connect_timeout_ms),
        };
        let timeout = Duration::from_millis(self.cfg.connect_timeout_ms.max(1));
        let addrs: Vec<SocketAddr> = (self.host.as_str(), self.cfg.port)
            .to_socket_addrs()
            .map_err(|e| {
                connect_err(format!(
                    "cannot resolve host name {}: {}",
                    self.host,
                    words::io_error(&e, self.cfg.connect_timeout_ms)
                ))
            })?
            .collect();
        let mut last = None;
        let mut tcp = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, timeout) {
                Ok(s) => {
                    tcp = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let tcp = tcp.ok_or_else(|| match last {
            Some(e) => connect_err(words::io_error(&e, self.cfg.connect_timeout_ms)),
            None => connect_err("host resolved to no address".to_string()),
        })?;
        tcp.set_nodelay(self.cfg.tcp_nodelay).map_err(|e| {
            connect_err(format!(
                "cannot set TCP_NODELAY: {}",
                words::io_error(&e, 0)
            ))
        })?;
        let fd = tcp.as_raw_fd();
        set_keepalive(fd).map_err(|e| {
            connect_err(format!(
                "cannot set TCP keepalive: {}",
                words::io_error(&e, 0)
            ))
        })?;
        let mut sess = Session::new().map_err(handshake_err)?;
        sess.set_timeout(u32::try_from(self.cfg.connect_timeout_ms.max(1)).unwrap_or(u32::MAX));
        sess.set_tcp_stream(tcp);
        sess.handshake().map_err(handshake_err)?;
        self.check_host_key(&sess, &addr)?;
        self.authenticate(&sess)?;
        sess.set_timeout(0);
        sess.set_blocking(false);
        self.sessions_opened.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(node = %self.node, addr = %addr, "ssh session open");
        Ok(Conn {
            sess,
            fd,
            broken: false,
        })
    }

    fn check_host_key(&self, sess: &Session, addr: &str) -> Result<(), ExecError> {
        if !self.cfg.strict_host_key_checking {
            return Ok(());
        }
        let err = |reason: String| ExecError::HostKey {
            node: self.node.clone(),
            addr: addr.to_string(),
            reason,
        };
        let path =
            match &self.cfg.known_hosts {
                Some(p) => p.clone(),
                None => match std::env::var_os("HOME") {
                    Some(h) => PathBuf::from(h).join(".ssh/known_hosts"),
                    None => return Err(err(
                        "HOME is not set, so there is no default known_hosts file; set known_hosts"
                            .to_string(),
                    )),
                },
            };
        let text = std::fs::read_to_string(&path).map_err(|e| {
            err(format!(
                "cannot read known_hosts file {}: {}",
                path.display(),
                words::io_error(&e, 0)
            ))
        })?;
        let mut kh = sess.known_hosts().map_err(|e| {
            err(format!(
                "cannot start the known_hosts check: {}",
                words::ssh_error(&e)
            ))
        })?;
        // Line by line, so one entry libssh2 cannot parse (e.g. @cert-authority, sk-* keys) does
        // not hide the others.
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let _ = kh.read_str(line, KnownHostFileKind::OpenSSH);
        }
        let (key, _) = sess
            .host_key()
            .ok_or_else(|| err("server sent no host key".to_string()))?;
        match kh.check_port(&self.host, self.cfg.port, key) {
            CheckResult::Match => Ok(()),
            CheckResult::NotFound => Err(err(format!(
                "host is not in known_hosts file {} (add it, e.g. `ssh-keyscan -p {} {} >> {}`, or turn off strict host key checking)",
                path.display(),
                self.cfg.port,
                self.host,
                path.display()
            ))),
            CheckResult::Mismatch => Err(err(format!(
                "host key does not match the entry in known_hosts file {} (host reinstalled, or someone is intercepting)",
                path.display()
            ))),
            CheckResult::Failure => Err(err(format!(
                "checking against known_hosts file {} failed",
                path.display()
            ))),
        }
    }

    fn authenticate(&self, sess: &Session) -> Result<(), ExecError> {
        let err = |reason: String| ExecError::Auth {
            node: self.node.clone(),
            user: self.cfg.user.clone(),
            reason,
        };
        let user = self.cfg.user.as_str();
        match &self.cfg.private_key {
            Some(key) => {
                std::fs::metadata(key).map_err(|e| {
                    err(format!(
                        "cannot read private key file {}: {}",
                        key.display(),
                        words::io_error(&e, 0)
                    ))
                })?;
                sess.userauth_pubkey_file(user, None, key, None)
                    .map_err(|e| {
                        err(format!("key {}: {}", key.display(), words::auth_error(&e)))
                    })?;
            }
            None => {
                let mut agent = sess.agent().map_err(|e| {
                    err(format!(
                        "cannot use the ssh-agent: {}",
                        words::ssh_error(&e)
                    ))
                })?;
                if let Some(sock) = &self.cfg.agent_socket {
                    agent.set_identity_path(sock).map_err(|e| {
                        err(format!(
                            "bad ssh-agent socket {}: {}",
                            sock.display(),
                            words::ssh_error(&e)
                        ))
                    })?;
                }
                agent.connect().map_err(|e| {
                    err(format!(
                        "cannot reach the ssh-agent: {}",
                        words::ssh_error(&e)
                    ))
                })?;
                agent.list_identities().map_err(|e| {
                    err(format!(
                        "cannot list ssh-agent keys: {}",
                        words::ssh_error(&e)
                    ))
                })?;
                let ids = agent.identities().map_err(|e| {
                    err(format!(
                        "cannot list ssh-agent keys: {}",
                        words::ssh_error(&e)
                    ))
                })?;
                if ids.is_empty() {
                    return Err(err("ssh-agent holds no keys".to_string()));
                }
                let accepted = ids.iter().any(|id| agent.userauth(user, id).is_ok());
                let _ = agent.disconnect();
                if !accepted {
                    return Err(err(format!(
                        "none of the {} ssh-agent key(s) was accepted",
                        ids.len()
                    )));
                }
            }
        }
        if !sess.authenticated() {
            return Err(err("server did not accept the key".to_string()));
        }
        Ok(())
    }

    /// Reserve a session for one command, opening a new one if the pool has room, else waiting.
    fn lease(&self, cmd: &Cmd) -> Result<Lease<'_>, ExecError> {
        let mut pool = self.lock_pool();
        loop {
            if let Some(c) = pool.idle.pop() {
                return Ok(Lease {
                    remote: self,
                    conn: Some(c),
                    keep: false,
                });
            }
            if pool.open < self.cfg.max_channels {
                pool.open += 1;
                break;
            }
            // Under a deadline, wait for a free session only until it passes.
            pool = match deadline::left(Instant::now()) {
                None => self
                    .slot_freed
                    .wait(pool)
                    .unwrap_or_else(|e| e.into_inner()),
                Some(left) if left.is_zero() => {
                    return Err(ExecError::OutOfTime {
                        node: self.node.clone(),
                        cmd: cmd.to_string(),
                    });
                }
                Some(left) => {
                    self.slot_freed
                        .wait_timeout(pool, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
        drop(pool);
        let mut lease = Lease {
            remote: self,
            conn: None,
            keep: false,
        };
        lease.conn = Some(self.open_conn()?);
        Ok(lease)
    }

    /// Run `cmd` and return raw bytes. See `ExecError` for the retry policy.
    fn exec_raw(&self, cmd: &Cmd) -> Result<RawOutput, ExecError> {
        let shell = cmd.to_shell_as(&self.cfg.user);
        let stdin = cmd.stdin_bytes().unwrap_or(&[]);
        let own_timeout_ms = cmd
            .timeout_override_ms()
            .unwrap_or(self.cfg.command_timeout_ms);
        let mut attempt = 0;
        loop {
            // Under the work's bound (`deadline`): cut short, or not sent once it has passed.
            let Ok(timeout_ms) =
                deadline::clip(own_timeout_ms, deadline::current(), Instant::now())
            else {
                return Err(ExecError::OutOfTime {
                    node: self.node.clone(),
                    cmd: cmd.to_string(),
                });
            };
            let mut lease = self.lease(cmd)?;
            let Some(conn) = lease.conn.as_ref() else {
                return Err(self.transport(cmd, "no session".to_string()));
            };
            let started = Instant::now();
            let deadline = (timeout_ms > 0).then(|| started + Duration::from_millis(timeout_ms));
            match run_on(conn, &shell, stdin, deadline) {
                Ok(out) => {
                    lease.keep = true;
                    tracing::debug!(
                        node = %self.node, cmd = %cmd, status = out.status,
                        elapsed_us = started.elapsed().as_micros() as u64, "exec"
                    );
                    return Ok(out);
                }
                Err(RunError::NotStarted(reason)) => {
                    drop(lease);
                    self.discard_idle();
                    if attempt >= self.cfg.retries {
                        return Err(self.transport(cmd, reason));
                    }
                    attempt += 1;
                    tracing::debug!(node = %self.node, attempt, %reason, "session dead before command was sent; reconnecting");
                    std::thread::sleep(backoff(&self.cfg, attempt));
                }
                Err(RunError::Timeout) => {
                    return Err(ExecError::Timeout {
                        node: self.node.clone(),
                        cmd: cmd.to_string(),
                        timeout_ms,
                    });
                }
                Err(RunError::Transport(reason)) => return Err(self.transport(cmd, reason)),
            }
        }
    }

    fn transport(&self, cmd: &Cmd, reason: String) -> ExecError {
        ExecError::Transport {
            node: self.node.clone(),
            cmd: cmd.to_string(),
            reason,
        }
    }

    fn failed(&self, cmd: &Cmd, out: &RawOutput) -> ExecError {
        ExecError::Failed {
            node: self.node.clone(),
            cmd: cmd.to_string(),
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        }
    }
}

impl Remote for SshRemote {
    fn node(&self) -> &str {
        &self.node
    }

    fn exec(&self, cmd: &Cmd) -> Result<ExecOutput, ExecError> {
        let raw = self.exec_raw(cmd)?;
        Ok(ExecOutput {
            status: raw.status,
            signal: raw.signal,
            stdout: String::from_utf8_lossy(&raw.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&raw.stderr).into_owned(),
        })
    }

    fn upload(&self, contents: &[u8], remote_path: &str, mode: u32) -> Result<(), ExecError> {
        let cmd = Cmd::script(
            UPLOAD_SCRIPT,
            [
                remote_path.to_string(),
                format!("{mode:o}"),
                contents.len().to_string(),
            ],
        )
        .sudo(true)
        .stdin(contents);
        let out = self.exec_raw(&cmd)?;
        if out.status != 0 || out.signal.is_some() {
            return Err(self.failed(&cmd, &out));
        }
        Ok(())
    }

    fn download(&self, remote_path: &str, local_path: &Path) -> Result<(), ExecError> {
        let cmd = Cmd::new("cat").arg("--").arg(remote_path).sudo(true);
        let out = self.exec_raw(&cmd)?;
        if out.status != 0 || out.signal.is_some() {
            // A missing file is told apart (asked with `test -e`, whatever language cat's
            // error is in), so a caller can take "not there" as an answer.
            let exists = Cmd::new("test").arg("-e").arg(remote_path).sudo(true);
            if self
                .exec_raw(&exists)
                .is_ok_and(|o| o.status == 1 && o.signal.is_none())
            {
                return Err(ExecError::NoSuchFile {
                    node: self.node.clone(),
                    path: remote_path.to_string(),
                });
            }
            return Err(self.failed(&cmd, &out));
        }
        std::fs::write(local_path, &out.stdout).map_err(|source| ExecError::Io {
            node: self.node.clone(),
            path: local_path.to_path_buf(),
            source,
        })
    }
}
