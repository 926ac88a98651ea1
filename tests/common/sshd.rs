//! Test fixture: a real, throwaway OpenSSH server on 127.0.0.1 for the `control` tests.
//!
//! Owns: generating a host key and two client keys with `ssh-keygen`, writing an `sshd_config`
//! into a temporary directory, starting `/usr/sbin/sshd -D -e` on a free loopback port, waiting
//! until it answers with an SSH banner, and killing it by PID on drop. It does not own any
//! assertion about SSH behaviour: the tests in `tests/control.rs` do that.
//!
//! The server logs in the current user (root in the sandbox) with public-key authentication only
//! (`UsePAM no`, `StrictModes no` because the temporary directory lives under world-writable
//! `/tmp`).

use std::fs;
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `sshd_config` line that keeps bash from sourcing `~/.bashrc` for each SSH command.
pub const SKIP_BASHRC: &str = "SetEnv SHLVL=1\n";

/// A running sshd plus the key material a client needs to reach it.
pub struct Sshd {
    /// Temporary directory holding keys, config, pid file and the server log.
    pub dir: tempfile::TempDir,
    /// Loopback TCP port the server listens on.
    pub port: u16,
    /// Private key whose public half is in `authorized_keys`.
    pub client_key: PathBuf,
    /// Private key that the server does not accept.
    pub wrong_key: PathBuf,
    /// A known_hosts file listing this server's host key as `[127.0.0.1]:<port>`.
    pub known_hosts: PathBuf,
    /// A known_hosts file that lists a different key for `[127.0.0.1]:<port>`.
    pub wrong_known_hosts: PathBuf,
    /// A known_hosts file with an unrelated host only (this server is unknown in it).
    pub empty_known_hosts: PathBuf,
    /// The sshd process (killed by PID on drop).
    child: Child,
}

fn keygen(path: &Path) -> Result<(), String> {
    let out = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "shakedown-test",
            "-f",
        ])
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run ssh-keygen: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "ssh-keygen -f {} failed: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// First two whitespace-separated fields of a `.pub` file: key type and base64 key.
fn pub_key(path: &Path) -> Result<String, String> {
    let mut p = path.as_os_str().to_owned();
    p.push(".pub");
    let text = fs::read_to_string(&p).map_err(|e| format!("cannot read {p:?}: {e}"))?;
    let fields: Vec<&str> = text.split_whitespace().take(2).collect();
    Ok(fields.join(" "))
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| format!("bind: {e}"))?;
    Ok(l.local_addr()
        .map_err(|e| format!("local_addr: {e}"))?
        .port())
}

fn banner_ready(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut buf = [0u8; 8];
    matches!(s.read_exact(&mut buf), Ok(()) if &buf[..4] == b"SSH-")
}

impl Sshd {
    /// Generate keys and start a server; retries on a port race with other processes.
    ///
    /// The server sets `SHLVL=1` for sessions, so bash (root's login shell) does not source
    /// `~/.bashrc` for every command (it does when started by sshd with `SHLVL` unset; on this
    /// machine that costs ~100 ms per command). `start_with("")` gives the stock behaviour.
    pub fn start() -> Result<Sshd, String> {
        Sshd::start_with(SKIP_BASHRC)
    }

    /// Like `start`, with `extra_config` (complete `sshd_config` lines) appended to the config.
    pub fn start_with(extra_config: &str) -> Result<Sshd, String> {
        // openssh-server comes through the project's install path on a fresh machine.
        shakedown::sandbox::ensure_packages(&[]).map_err(|e| e.to_string())?;
        fs::create_dir_all("/run/sshd").map_err(|e| format!("mkdir /run/sshd: {e}"))?;
        let dir = tempfile::Builder::new()
            .prefix("shakedown-sshd-")
            .tempdir()
            .map_err(|e| format!("tempdir: {e}"))?;
        let d = dir.path();
        let host_key = d.join("host_ed25519");
        let client_key = d.join("id_client");
        let wrong_key = d.join("id_wrong");
        let other_host = d.join("other_host");
        for k in [&host_key, &client_key, &wrong_key, &other_host] {
            keygen(k)?;
        }
        fs::write(d.join("authorized_keys"), pub_key(&client_key)? + "\n")
            .map_err(|e| format!("write authorized_keys: {e}"))?;

        let mut last_err = String::new();
        for _attempt in 0..5 {
            let port = free_port()?;
            let config = format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nPidFile {pid}\n\
                 AuthorizedKeysFile {ak}\nStrictModes no\nUsePAM no\nPermitRootLogin yes\n\
                 PubkeyAuthentication yes\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nMaxSessions 20\nMaxStartups 100:30:200\n\
                 LogLevel ERROR\nSubsystem sftp internal-sftp\n",
                hk = host_key.display(),
                pid = d.join("sshd.pid").display(),
                ak = d.join("authorized_keys").display(),
            );
            let config = config + extra_config;
            let cfg_path = d.join("sshd_config");
            fs::write(&cfg_path, config).map_err(|e| format!("write sshd_config: {e}"))?;
            let log = fs::File::create(d.join("sshd.log")).map_err(|e| format!("log: {e}"))?;
            let mut child = Command::new("/usr/sbin/sshd")
                .arg("-D")
                .arg("-e")
                .arg("-f")
                .arg(&cfg_path)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .map_err(|e| format!("cannot start /usr/sbin/sshd: {e}"))?;
            let start = Instant::now();
            let mut ready = false;
            while start.elapsed() < Duration::from_secs(5) {
                if let Ok(Some(status)) = child.try_wait() {
                    last_err = format!(
                        "sshd exited with {status}: {}",
                        fs::read_to_string(d.join("sshd.log")).unwrap_or_default()
                    );
                    break;
                }
                if banner_ready(port) {
                    ready = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if !ready {
                let _ = child.kill();
                let _ = child.wait();
                if last_err.is_empty() {
                    last_err = format!("sshd on port {port} did not answer within 5 s");
                }
                continue;
            }
            let hostpat = format!("[127.0.0.1]:{port}");
            let known_hosts = d.join("known_hosts");
            fs::write(
                &known_hosts,
                format!(
                    "otherhost.example {}\n{hostpat} {}\n",
                    pub_key(&other_host)?,
                    pub_key(&host_key)?
                ),
            )
            .map_err(|e| format!("write known_hosts: {e}"))?;
            let wrong_known_hosts = d.join("known_hosts_wrong");
            fs::write(
                &wrong_known_hosts,
                format!("{hostpat} {}\n", pub_key(&other_host)?),
            )
            .map_err(|e| format!("write known_hosts_wrong: {e}"))?;
            let empty_known_hosts = d.join("known_hosts_empty");
            fs::write(
                &empty_known_hosts,
                format!("otherhost.example {}\n", pub_key(&other_host)?),
            )
            .map_err(|e| format!("write known_hosts_empty: {e}"))?;
            return Ok(Sshd {
                dir,
                port,
                client_key,
                wrong_key,
                known_hosts,
                wrong_known_hosts,
                empty_known_hosts,
                child,
            });
        }
        Err(format!("could not start sshd: {last_err}"))
    }

    /// Kill the listening sshd (by PID) and every per-connection sshd process serving it (found
    /// as its children), as when a node's sshd dies: established sessions break too.
    #[allow(dead_code)]
    pub fn stop(&mut self) {
        let pid = self.child.id();
        let children =
            fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        let _ = self.child.kill();
        let _ = self.child.wait();
        for c in children.split_whitespace() {
            if let Ok(c) = c.parse::<i32>() {
                // SAFETY: plain kill(2) on a PID that was our sshd's child a moment ago.
                unsafe { libc::kill(c, libc::SIGKILL) };
            }
        }
    }

    /// Start sshd again on the same port with the same keys and config (after `stop`).
    #[allow(dead_code)]
    pub fn start_again(&mut self) -> Result<(), String> {
        let log = fs::OpenOptions::new()
            .append(true)
            .open(self.dir.path().join("sshd.log"))
            .map_err(|e| format!("log: {e}"))?;
        self.child = Command::new("/usr/sbin/sshd")
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(self.dir.path().join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start /usr/sbin/sshd: {e}"))?;
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if banner_ready(self.port) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!("sshd on port {} did not come back", self.port))
    }

    /// Contents of the server's stderr log so far (for failure messages).
    #[allow(dead_code)]
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        // Child::kill sends SIGKILL to exactly this PID (the listening sshd we started).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
