//! Waiting for a built-in system's server to be ready: run its readiness script until it exits 0
//! (ready), [`NOT_RUNNING`] (the server process is gone: an error at once, with what the script
//! printed — its log tail) or the ready timeout passes (an error with what it printed last).
//!
//! Owns that loop and the exit status, once for every system whose readiness is a script (etcd,
//! PostgreSQL, Redis, Galera / MariaDB; NATS asks over its client but shares [`NOT_RUNNING`]).
//! Does not own the scripts (each system's `db`) nor what ready means for a system.

use crate::control::{Cmd, Remote};
use crate::db::DbError;
use crate::node::Node;
use std::time::{Duration, Instant};

/// Exit status of a readiness script when the server process is gone.
pub const NOT_RUNNING: i32 = 3;

/// How to wait for one node and how to word the errors.
pub struct Readiness<'a> {
    /// The server's name in "… exited during startup" (`etcd`, `postgres`, `mariadbd`).
    pub server: &'a str,
    /// What was not ready in time (`postgres replica`, `galera node`).
    pub what: String,
    /// How long to wait, in ms.
    pub timeout_ms: u64,
    /// Pause between two runs of the script, in ms.
    pub interval_ms: u64,
    /// The words for a server that exited, from what the script printed (its log tail).
    pub exited: fn(&str) -> String,
}

/// The script's output, trimmed: the usual [`Readiness::exited`].
pub fn trimmed(stdout: &str) -> String {
    stdout.trim().to_string()
}

/// Run `cmd` on `node` until it reports the server ready (see the module doc).
pub fn poll(
    remote: &dyn Remote,
    node: &Node,
    cmd: &Cmd,
    how: &Readiness<'_>,
) -> Result<(), DbError> {
    let start = Instant::now();
    let deadline = start + Duration::from_millis(how.timeout_ms);
    loop {
        let out = remote.exec(cmd)?;
        if out.status == 0 {
            return Ok(());
        }
        if out.status == NOT_RUNNING {
            return Err(DbError::Other {
                node: node.name.clone(),
                message: format!(
                    "{} exited during startup: {}",
                    how.server,
                    (how.exited)(&out.stdout)
                ),
            });
        }
        if Instant::now() >= deadline {
            return Err(DbError::NotReady {
                node: node.name.clone(),
                what: how.what.clone(),
                waited_ms: start.elapsed().as_millis() as u64,
                detail: format!("{} {}", out.stdout.trim(), out.stderr.trim()),
            });
        }
        std::thread::sleep(Duration::from_millis(how.interval_ms));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::{ExecError, ExecOutput};
    use std::path::Path;
    use std::sync::Mutex;

    /// Answers each exec with the next exit status of a script (the last one repeats).
    struct Scripted {
        statuses: Mutex<Vec<i32>>,
    }

    impl Remote for Scripted {
        fn node(&self) -> &str {
            "n1"
        }
        fn exec(&self, _: &Cmd) -> Result<ExecOutput, ExecError> {
            let mut s = self.statuses.lock().unwrap();
            let status = if s.len() > 1 { s.remove(0) } else { s[0] };
            Ok(ExecOutput {
                status,
                signal: None,
                stdout: " log tail \n".into(),
                stderr: "not yet".into(),
            })
        }
        fn upload(&self, _: &[u8], _: &str, _: u32) -> Result<(), ExecError> {
            Ok(())
        }
        fn download(&self, _: &str, _: &Path) -> Result<(), ExecError> {
            Ok(())
        }
    }

    fn wait(statuses: Vec<i32>, timeout_ms: u64) -> Result<(), DbError> {
        let remote = Scripted {
            statuses: Mutex::new(statuses),
        };
        let node = Node {
            name: "n1".into(),
            host: "10.0.0.1".into(),
        };
        let how = Readiness {
            server: "toyd",
            what: "toy primary".into(),
            timeout_ms,
            interval_ms: 1,
            exited: trimmed,
        };
        poll(&remote, &node, &Cmd::script("true", [""; 0]), &how)
    }

    #[test]
    fn ready_after_tries_gone_at_once_else_not_ready_at_the_timeout() {
        assert!(wait(vec![1, 1, 0], 60_000).is_ok());
        let gone = wait(vec![1, NOT_RUNNING], 60_000).unwrap_err().to_string();
        assert!(
            gone.contains("toyd exited during startup: log tail"),
            "{gone}"
        );
        let late = wait(vec![1], 5).unwrap_err();
        assert!(matches!(late, DbError::NotReady { .. }), "{late}");
        assert!(late.to_string().contains("log tail not yet"), "{late}");
    }
}
