//! The probe client: one health check of the system under test, run on the controller — a shell
//! command (`sh -c CMD`, exit status 0 = served) or an HTTP GET (a 2xx answer = served).
//!
//! Every probe completes `ok` or `fail` (never `info`): a probe has no effect on the system, so
//! "did it answer in time" always has a definite answer. A probe that outlives its timeout
//! fails with `timed out after N ms`, and its command's whole process group is killed (the
//! command runs in a process group of its own). The error of a failed command is its exit
//! status and the last line of its stderr (or stdout). Shell: runs processes and opens sockets.

use super::ProbeTarget;
use crate::client::{Client, Completion};
use serde_json::Value;
use std::time::Duration;

/// Longest error text kept from a failed probe's output.
const MAX_ERROR_CHARS: usize = 200;

/// Runs probes of one target with one timeout.
pub struct ProbeClient {
    target: ProbeTarget,
    timeout: Duration,
    http: Option<reqwest::Client>,
}

impl ProbeClient {
    /// A client for `target`; an HTTP target gets its own connection pool.
    pub fn new(target: ProbeTarget, timeout_ms: u64) -> Result<ProbeClient, String> {
        let timeout = Duration::from_millis(timeout_ms);
        let http = match &target {
            ProbeTarget::Http(_) => Some(
                // A fresh connection per probe: it measures connecting too, as a new client
                // of the service would, and a dead pooled connection never fails a probe.
                reqwest::Client::builder()
                    .timeout(timeout)
                    .pool_max_idle_per_host(0)
                    .build()
                    .map_err(|e| format!("cannot make an HTTP client for the probe: {e}"))?,
            ),
            ProbeTarget::Command(_) => None,
        };
        Ok(ProbeClient {
            target,
            timeout,
            http,
        })
    }

    /// Run one probe: `Ok(())` when served, else why not.
    pub async fn probe(&self) -> Result<(), String> {
        match &self.target {
            ProbeTarget::Command(cmd) => run_command(cmd, self.timeout).await,
            ProbeTarget::Http(url) => {
                let client = self.http.as_ref().expect("made with the HTTP target");
                get(client, url, self.timeout).await
            }
        }
    }
}

fn timed_out(timeout: Duration) -> String {
    format!("timed out after {} ms", timeout.as_millis())
}

/// The last non-empty line of `text`, cut to [`MAX_ERROR_CHARS`].
fn last_line(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    let line = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    line.chars().take(MAX_ERROR_CHARS).collect()
}

async fn run_command(cmd: &str, timeout: Duration) -> Result<(), String> {
    let mut command = tokio::process::Command::new("sh");
    command
        .arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let child = command
        .spawn()
        .map_err(|e| format!("cannot start sh for the probe: {e}"))?;
    let pid = child.id();
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Err(_) => {
            if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
                // The probe's own process group (process_group(0) above): the shell and
                // whatever it started.
                // SAFETY: kill(2) with a negative pid signals that process group only.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
            Err(timed_out(timeout))
        }
        Ok(Err(e)) => Err(format!("probe command did not complete: {e}")),
        Ok(Ok(out)) if out.status.success() => Ok(()),
        Ok(Ok(out)) => {
            let status = match out.status.code() {
                Some(c) => format!("exit status {c}"),
                None => "killed by a signal".to_string(),
            };
            let said = last_line(&out.stderr);
            let said = if said.is_empty() {
                last_line(&out.stdout)
            } else {
                said
            };
            Err(if said.is_empty() {
                status
            } else {
                format!("{status}: {said}")
            })
        }
    }
}

async fn get(client: &reqwest::Client, url: &str, timeout: Duration) -> Result<(), String> {
    let answer = tokio::time::timeout(timeout, async {
        let resp = client.get(url).send().await.map_err(|e| http_error(&e))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let body = resp.bytes().await.unwrap_or_default();
        let said = last_line(&body);
        Err(if said.is_empty() {
            format!("HTTP {status}")
        } else {
            format!("HTTP {status}: {said}")
        })
    })
    .await;
    answer.unwrap_or_else(|_| Err(timed_out(timeout)))
}

/// An HTTP client error in words (connection refused, timed out), without library type names.
fn http_error(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "timed out".into();
    }
    let mut cause: Option<&dyn std::error::Error> = Some(e);
    let mut innermost = e.to_string();
    while let Some(c) = cause {
        innermost = c.to_string();
        cause = c.source();
    }
    // "Connection refused (os error 111)" → "Connection refused".
    if let Some(i) = innermost.find(" (os error") {
        innermost.truncate(i);
    }
    if e.is_connect() {
        format!("cannot connect: {innermost}")
    } else {
        innermost
    }
}

#[async_trait::async_trait]
impl Client for ProbeClient {
    async fn invoke(&mut self, _f: &str, _key: Option<&str>, _value: &Value) -> Completion {
        match self.probe().await {
            Ok(()) => Completion::Ok {
                value: Value::Null,
                version: None,
            },
            Err(error) => Completion::Fail {
                error,
                value: Value::Null,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(cmd: &str, timeout_ms: u64) -> ProbeClient {
        ProbeClient::new(ProbeTarget::Command(cmd.into()), timeout_ms).unwrap()
    }

    #[tokio::test]
    async fn a_command_probe_is_served_by_exit_status_zero_and_names_why_not() {
        assert_eq!(command("true", 2000).probe().await, Ok(()));
        let e = command("echo nope >&2; exit 3", 2000)
            .probe()
            .await
            .unwrap_err();
        assert_eq!(e, "exit status 3: nope");
        let e = command("sleep 5", 200).probe().await.unwrap_err();
        assert_eq!(e, "timed out after 200 ms");
    }

    #[tokio::test]
    async fn an_http_probe_needs_a_2xx_answer() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (closed_tx, closed) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            for status in ["200 OK", "503 Service Unavailable"] {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf).await;
                let body = "not ready";
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
            }
            drop(listener);
            let _ = closed_tx.send(());
        });
        let url = format!("http://{addr}/health");
        let c = ProbeClient::new(ProbeTarget::Http(url.clone()), 2000).unwrap();
        assert_eq!(c.probe().await, Ok(()));
        let e = c.probe().await.unwrap_err();
        assert!(e.starts_with("HTTP 503"), "{e}");
        // Nobody listens any more.
        closed.await.unwrap();
        let e = c.probe().await.unwrap_err();
        assert!(
            e.starts_with("cannot connect") && !e.contains("os error"),
            "{e}"
        );
    }
}
