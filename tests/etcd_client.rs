//! Integration tests of `shakedown::systems::etcd::client` against a real single-node etcd 3.4.
//!
//! Owns the `LocalEtcd` fixture (starts `etcd` on loopback with free ports and a temporary data
//! dir, waits for health, kills it by PID on drop) and a canned loopback HTTP server used to drive
//! the client through gateway errors and dropped connections end to end. Does not test the
//! classification table entry by entry (those are unit tests in `src/systems/etcd/client.rs`). Each test
//! starts its own etcd so the pause (SIGSTOP) test cannot disturb the others.

use serde_json::{Value, json};
use shakedown::client::{Client, Completion};
use shakedown::options::ReadMode;
use shakedown::systems::etcd::client::{CasOutcome, EtcdClient, EtcdClientConfig};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A single-node etcd on 127.0.0.1, killed on drop.
struct LocalEtcd {
    child: Child,
    endpoint: String,
    _data_dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind 127.0.0.1:0")
        .local_addr()
        .expect("local_addr")
        .port()
}

impl LocalEtcd {
    async fn start() -> LocalEtcd {
        // etcd comes through the project's install path on a fresh machine.
        let packages = {
            use shakedown::db::Db;
            shakedown::systems::etcd::Etcd::default().packages()
        };
        if let Err(e) = shakedown::provision::host::ensure(&packages) {
            panic!("etcd is needed for these tests and could not be installed: {e}");
        }
        let data_dir = tempfile::tempdir().expect("tempdir");
        let client_port = free_port();
        let peer_port = free_port();
        let endpoint = format!("http://127.0.0.1:{client_port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let log = std::fs::File::create(data_dir.path().join("etcd.log")).expect("log file");
        let child = Command::new("etcd")
            .arg("--name")
            .arg("t")
            .arg("--data-dir")
            .arg(data_dir.path().join("data"))
            .arg("--listen-client-urls")
            .arg(&endpoint)
            .arg("--advertise-client-urls")
            .arg(&endpoint)
            .arg("--listen-peer-urls")
            .arg(&peer)
            .arg("--initial-advertise-peer-urls")
            .arg(&peer)
            .arg("--initial-cluster")
            .arg(format!("t={peer}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn etcd");
        let etcd = LocalEtcd {
            child,
            endpoint,
            _data_dir: data_dir,
        };
        let probe = etcd.client(ReadMode::Linearizable, 1000);
        if let Err(e) = probe.wait_healthy(20_000).await {
            let log =
                std::fs::read_to_string(etcd._data_dir.path().join("etcd.log")).unwrap_or_default();
            panic!("etcd did not become healthy: {e}\n--- etcd log ---\n{log}");
        }
        etcd
    }

    fn pid(&self) -> libc::pid_t {
        self.child.id() as libc::pid_t
    }

    fn client(&self, read_mode: ReadMode, timeout_ms: u64) -> EtcdClient {
        EtcdClient::new(EtcdClientConfig {
            endpoint: self.endpoint.clone(),
            read_mode,
            timeout_ms,
            key_prefix: "/test/".to_string(),
        })
        .expect("client")
    }
}

impl Drop for LocalEtcd {
    fn drop(&mut self) {
        // SIGKILL works on stopped processes too; kill our own child by PID and reap it.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn expect_ok(c: Completion) -> (Value, Option<i64>) {
    match c {
        Completion::Ok { value, version } => (value, version),
        other => panic!("expected Ok, got {other:?}"),
    }
}

#[tokio::test]
async fn read_absent_key_is_ok_null() {
    let etcd = LocalEtcd::start().await;
    let mut c = etcd.client(ReadMode::Linearizable, 1000);
    let (value, version) = expect_ok(c.invoke("read", Some("absent"), &Value::Null).await);
    assert_eq!(value, Value::Null);
    assert_eq!(version, None);
    assert_eq!(c.get("/test/absent").await.unwrap(), None);
}

#[tokio::test]
async fn write_then_read_returns_value_and_mod_revision() {
    let etcd = LocalEtcd::start().await;
    let mut c = etcd.client(ReadMode::Linearizable, 1000);
    let (value, write_rev) = expect_ok(c.invoke("write", Some("1"), &json!(3)).await);
    assert_eq!(value, json!(3));
    let write_rev = write_rev.expect("write has a revision");
    assert!(write_rev > 1, "revision {write_rev}");
    let (value, read_rev) = expect_ok(c.invoke("read", Some("1"), &Value::Null).await);
    assert_eq!(value, json!(3));
    assert_eq!(read_rev, Some(write_rev));
    // A second write bumps the revision, and the stored text is plain decimal.
    let (_, rev2) = expect_ok(c.invoke("write", Some("1"), &json!(-4)).await);
    assert!(rev2.unwrap() > write_rev);
    assert_eq!(c.get("/test/1").await.unwrap(), Some((-4, rev2.unwrap())));
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args([
            "--endpoints",
            &etcd.endpoint,
            "get",
            "/test/1",
            "--print-value-only",
        ])
        .output()
        .expect("run etcdctl");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "-4");
}

#[tokio::test]
async fn cas_success_and_mismatch() {
    let etcd = LocalEtcd::start().await;
    let mut c = etcd.client(ReadMode::Linearizable, 1000);
    expect_ok(c.invoke("write", Some("r"), &json!(1)).await);
    let (value, rev) = expect_ok(c.invoke("cas", Some("r"), &json!([1, 2])).await);
    assert_eq!(value, json!([1, 2]));
    let rev = rev.expect("cas has a revision");
    let (value, read_rev) = expect_ok(c.invoke("read", Some("r"), &Value::Null).await);
    assert_eq!((value, read_rev), (json!(2), Some(rev)));

    // The key now holds 2, so cas 1→5 must fail definitely and leave 2 in place.
    match c.invoke("cas", Some("r"), &json!([1, 5])).await {
        Completion::Fail { error, value } => {
            assert_eq!(error, "cas-mismatch");
            assert_eq!(value, json!([1, 5]));
        }
        other => panic!("expected cas-mismatch, got {other:?}"),
    }
    let (value, read_rev) = expect_ok(c.invoke("read", Some("r"), &Value::Null).await);
    assert_eq!((value, read_rev), (json!(2), Some(rev)));
    assert_eq!(c.cas("/test/r", 7, 8).await.unwrap(), CasOutcome::Mismatch);
    assert!(matches!(
        c.cas("/test/r", 2, 3).await.unwrap(),
        CasOutcome::Swapped { revision } if revision > rev
    ));
}

#[tokio::test]
async fn cas_on_absent_key_is_mismatch_and_creates_nothing() {
    let etcd = LocalEtcd::start().await;
    let mut c = etcd.client(ReadMode::Linearizable, 1000);
    match c.invoke("cas", Some("nokey"), &json!([0, 1])).await {
        Completion::Fail { error, .. } => assert_eq!(error, "cas-mismatch"),
        other => panic!("expected cas-mismatch, got {other:?}"),
    }
    let (value, version) = expect_ok(c.invoke("read", Some("nokey"), &Value::Null).await);
    assert_eq!((value, version), (Value::Null, None));
}

#[tokio::test]
async fn serializable_read_sees_write() {
    let etcd = LocalEtcd::start().await;
    let mut w = etcd.client(ReadMode::Linearizable, 1000);
    let mut r = etcd.client(ReadMode::Serializable, 1000);
    let (_, rev) = expect_ok(w.invoke("write", Some("s"), &json!(9)).await);
    let (value, version) = expect_ok(r.invoke("read", Some("s"), &Value::Null).await);
    assert_eq!((value, version), (json!(9), rev));
}

#[tokio::test]
async fn connection_refused_is_fail_naming_endpoint() {
    // Bind then drop to find a port with nothing listening.
    let port = free_port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let mut c = EtcdClient::new(EtcdClientConfig {
        endpoint: endpoint.clone(),
        timeout_ms: 1000,
        ..EtcdClientConfig::default()
    })
    .unwrap();
    for (f, v) in [
        ("read", Value::Null),
        ("write", json!(1)),
        ("cas", json!([1, 2])),
    ] {
        let t0 = Instant::now();
        match c.invoke(f, Some("k"), &v).await {
            Completion::Fail { error, value } => {
                assert!(error.starts_with("connect: "), "{f}: {error}");
                assert!(error.contains(&endpoint), "{f}: {error}");
                assert_eq!(value, v);
            }
            other => panic!("{f}: expected Fail, got {other:?}"),
        }
        assert!(
            t0.elapsed() < Duration::from_millis(1000),
            "{f} took {:?}",
            t0.elapsed()
        );
    }
    assert_eq!(c.health().await.unwrap_err().kind(), "connect");
    let t0 = Instant::now();
    let e = c.wait_healthy(300).await.unwrap_err();
    assert!(
        t0.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t0.elapsed()
    );
    assert!(
        e.to_string().contains("not healthy within 300 ms") && e.to_string().contains("connect"),
        "{e}"
    );
}

#[tokio::test]
async fn paused_etcd_write_is_info_within_timeout_and_read_is_fail() {
    let etcd = LocalEtcd::start().await;
    let timeout_ms = 500;
    let mut c = etcd.client(ReadMode::Linearizable, timeout_ms);
    // Establish a keep-alive connection first, so the paused case exercises a reused connection.
    expect_ok(c.invoke("write", Some("p"), &json!(1)).await);

    // SAFETY: kill(2) has no memory-safety preconditions; the PID is our own child.
    assert_eq!(unsafe { libc::kill(etcd.pid(), libc::SIGSTOP) }, 0);
    wait_stopped(etcd.pid());
    let slack = Duration::from_millis(400);
    let limit = Duration::from_millis(timeout_ms) + slack;

    let t0 = Instant::now();
    let write = c.invoke("write", Some("p"), &json!(2)).await;
    let write_elapsed = t0.elapsed();
    let t0 = Instant::now();
    let cas = c.invoke("cas", Some("p"), &json!([1, 3])).await;
    let cas_elapsed = t0.elapsed();
    let t0 = Instant::now();
    let read = c.invoke("read", Some("p"), &Value::Null).await;
    let read_elapsed = t0.elapsed();
    // A fresh client: connect succeeds (kernel backlog) but no response arrives.
    let mut fresh = etcd.client(ReadMode::Linearizable, timeout_ms);
    let t0 = Instant::now();
    let fresh_write = fresh.invoke("write", Some("p"), &json!(4)).await;
    let fresh_elapsed = t0.elapsed();

    assert_eq!(unsafe { libc::kill(etcd.pid(), libc::SIGCONT) }, 0);

    for (name, c, elapsed) in [
        ("write", &write, write_elapsed),
        ("cas", &cas, cas_elapsed),
        ("fresh write", &fresh_write, fresh_elapsed),
    ] {
        match c {
            Completion::Info { error } => {
                assert!(error.starts_with("timeout: "), "{name}: {error}");
                assert!(error.contains(&etcd.endpoint), "{name}: {error}");
            }
            other => panic!("{name}: expected Info, got {other:?}"),
        }
        assert!(
            elapsed >= Duration::from_millis(timeout_ms - 50),
            "{name}: {elapsed:?}"
        );
        assert!(elapsed <= limit, "{name} took {elapsed:?}, limit {limit:?}");
    }
    match &read {
        Completion::Fail { error, .. } => assert!(error.starts_with("timeout: "), "{error}"),
        other => panic!("read: expected Fail, got {other:?}"),
    }
    assert!(read_elapsed <= limit, "read took {read_elapsed:?}");

    // After SIGCONT the same client recovers; the timed-out write may or may not have applied.
    c.wait_healthy(10_000).await.expect("healthy after SIGCONT");
    let (value, _) = expect_ok(c.invoke("read", Some("p"), &Value::Null).await);
    let v = value.as_i64().expect("integer");
    assert!([1, 2, 3, 4].contains(&v), "read {v}");
}

/// What the canned HTTP server does with each request.
#[derive(Clone, Copy)]
enum Canned {
    /// Answer with this status and body.
    Respond(u16, &'static str),
    /// Read the whole request, then close the connection without answering.
    CloseAfterRequest,
}

/// Read one HTTP request (headers + content-length body) from `sock`.
async fn read_request(sock: &mut tokio::net::TcpStream) -> std::io::Result<()> {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = sock.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let len = text[..end]
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                return Ok(());
            }
        }
    }
}

/// A loopback HTTP server answering every request the same canned way. Returns its endpoint.
async fn canned_server(behaviour: Canned) -> String {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                if read_request(&mut sock).await.is_err() {
                    return;
                }
                if let Canned::Respond(status, body) = behaviour {
                    let resp = format!(
                        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = sock.write_all(resp.as_bytes()).await;
                }
                let _ = sock.shutdown().await;
            });
        }
    });
    endpoint
}

fn client_for(endpoint: &str) -> EtcdClient {
    EtcdClient::new(EtcdClientConfig {
        endpoint: endpoint.to_string(),
        timeout_ms: 1000,
        ..EtcdClientConfig::default()
    })
    .unwrap()
}

/// Invoke read, write and cas; return (read, write, cas) completions.
async fn all_three(c: &mut EtcdClient) -> [Completion; 3] {
    [
        c.invoke("read", Some("k"), &Value::Null).await,
        c.invoke("write", Some("k"), &json!(1)).await,
        c.invoke("cas", Some("k"), &json!([1, 2])).await,
    ]
}

#[tokio::test]
async fn ambiguous_server_error_is_info_for_writes_and_fail_for_reads() {
    let ep = canned_server(Canned::Respond(
        503,
        r#"{"error":"etcdserver: request timed out","message":"etcdserver: request timed out","code":14}"#,
    ))
    .await;
    let [read, write, cas] = all_three(&mut client_for(&ep)).await;
    assert!(
        matches!(&read, Completion::Fail { error, .. } if error.starts_with("server: ") && error.contains("request timed out")),
        "{read:?}"
    );
    for c in [write, cas] {
        assert!(
            matches!(&c, Completion::Info { error } if error.contains(&ep) && error.contains("HTTP 503")),
            "{c:?}"
        );
    }
}

#[tokio::test]
async fn definite_server_error_is_fail_for_writes() {
    let ep = canned_server(Canned::Respond(
        429,
        r#"{"error":"etcdserver: too many requests","message":"etcdserver: too many requests","code":8}"#,
    ))
    .await;
    for c in all_three(&mut client_for(&ep)).await {
        assert!(
            matches!(&c, Completion::Fail { error, .. } if error.contains("too many requests")),
            "{c:?}"
        );
    }
}

#[tokio::test]
async fn undecodable_ok_body_is_info_with_body_for_writes() {
    let ep = canned_server(Canned::Respond(200, "surprise, not json")).await;
    let [read, write, cas] = all_three(&mut client_for(&ep)).await;
    assert!(
        matches!(&read, Completion::Fail { error, .. } if error.starts_with("decode: ")),
        "{read:?}"
    );
    for c in [write, cas] {
        assert!(
            matches!(&c, Completion::Info { error } if error.starts_with("decode: ") && error.contains("surprise, not json")),
            "{c:?}"
        );
    }
}

#[tokio::test]
async fn connection_closed_after_request_is_info_for_writes() {
    let ep = canned_server(Canned::CloseAfterRequest).await;
    let [read, write, cas] = all_three(&mut client_for(&ep)).await;
    assert!(
        matches!(&read, Completion::Fail { error, .. } if error.starts_with("transport: ")),
        "{read:?}"
    );
    for c in [write, cas] {
        assert!(
            matches!(&c, Completion::Info { error } if error.starts_with("transport: ") && error.contains(&ep)),
            "{c:?}"
        );
    }
}

/// Wait until every thread of `pid` is stopped: kill(2) returns before a SIGSTOP has reached
/// all of a process's threads, and a request sent in between can still be served (a CI run saw
/// the paused write come back ok).
fn wait_stopped(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("etcd's threads");
        let all_stopped = tasks.flatten().all(|t| {
            std::fs::read_to_string(t.path().join("stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(')')
                        .map(|(_, rest)| rest.trim_start().starts_with('T'))
                })
                .unwrap_or(true)
        });
        if all_stopped {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "etcd {pid} not stopped after 5 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
